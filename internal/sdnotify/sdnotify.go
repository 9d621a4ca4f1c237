// Package sdnotify tells the service manager that started the process
// about its state, as sd_notify(3) does: systemd's Type=notify services
// send READY=1 once they serve and STOPPING=1 when they begin to leave.
// The protocol is one datagram per message on the unix socket named by
// $NOTIFY_SOCKET (a path, or an abstract socket when it starts with "@").
package sdnotify

import (
	"fmt"
	"net"
	"time"
)

// EnvSocket is the environment variable in which systemd passes the
// notification socket to a Type=notify service.
const EnvSocket = "NOTIFY_SOCKET"

// Messages of the protocol (sd_notify(3)); several go in one call
// separated by newlines.
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
)

// writeTimeout bounds one notification: the service manager reads its
// socket at once, and a process must not hang on a full one.
const writeTimeout = 5 * time.Second

// Notify sends state, newline-separated VARIABLE=value lines such as
// "READY=1\nSTATUS=serving", in one datagram to socket, the value of
// $NOTIFY_SOCKET. An empty socket (the process was not started by a
// service manager that listens) sends nothing and returns nil. An error
// names the socket; the caller decides whether it matters (systemd kills
// a Type=notify service that never reports READY=1 when its start
// timeout passes). Safe for concurrent use.
func Notify(socket, state string) error {
	if socket == "" {
		return nil
	}
	if socket[0] != '/' && socket[0] != '@' {
		return fmt.Errorf("sd_notify: %s=%q: want an absolute path or @abstract-name", EnvSocket, socket)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify: %s=%s: %w", EnvSocket, socket, err)
	}
	defer conn.Close()
	if err := conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return fmt.Errorf("sd_notify: %s=%s: %w", EnvSocket, socket, err)
	}
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify: %s=%s: %w", EnvSocket, socket, err)
	}
	return nil
}
