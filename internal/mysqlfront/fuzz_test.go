package mysqlfront

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"io"
	"log/slog"
	"math/big"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/console"
)

type echoExecutor struct{}

func (echoExecutor) Execute(_ context.Context, _ *console.Session, q string) (*console.Result, error) {
	if q == "" {
		return nil, &sqlerr.Error{Code: 1064, SQLState: "42000", Message: "empty"}
	}
	return &console.Result{Columns: []console.Column{{Name: "q"}}, Rows: [][]*string{{&q}}}, nil
}

// pipeConn is one end of net.Pipe with a client address of our choice.
type pipeConn struct {
	net.Conn
	remote net.Addr
}

func (c pipeConn) RemoteAddr() net.Addr { return c.remote }

func newFuzzServer(tlsConfig *tls.Config) *Server {
	s, err := New(Config{
		Executor: echoExecutor{}, MaxPacketSize: 1 << 16, TLS: tlsConfig,
		HandshakeTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	return s
}

var (
	fuzzServer    = sync.OnceValue(func() *Server { return newFuzzServer(nil) })
	fuzzTLSServer = sync.OnceValue(func() *Server {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		return newFuzzServer(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	})
)

// packet frames payload as one MySQL packet with sequence number seq.
func packet(seq byte, payload []byte) []byte {
	h := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}
	return append(h, payload...)
}

// loginPacket is a handshake response logging in as root without a
// password with mysql_native_password.
func loginPacket() []byte {
	var p []byte
	flags := mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_LONG_PASSWORD
	p = binary.LittleEndian.AppendUint32(p, flags)
	p = binary.LittleEndian.AppendUint32(p, 1<<24)
	p = append(p, 33)
	p = append(p, make([]byte, 23)...)
	p = append(p, "root\x00"...)
	p = append(p, 0) // no auth data
	p = append(p, mysql.AUTH_NATIVE_PASSWORD+"\x00"...)
	return packet(1, p)
}

// runSession runs one session over a pipe from client address remote: it
// writes input (after a login when login is set) and a COM_QUIT, and
// returns what the client received once the session ended (input that
// leaves a packet unfinished ends it by the idle or handshake timeout).
// It fails the test when the session does not end.
func runSession(t testing.TB, remote string, login bool, input []byte) []byte {
	return runSessionOn(t, fuzzServer(), remote, login, input)
}

func runSessionOn(t testing.TB, s *Server, remote string, login bool, input []byte) []byte {
	client, srv := net.Pipe()
	ss := newSession(context.Background(), s, pipeConn{srv, &net.TCPAddr{IP: net.ParseIP(remote), Port: 40000}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ss.serve()
	}()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		_, _ = io.Copy(&out, client)
	}()
	go func() {
		if login {
			if _, err := client.Write(loginPacket()); err != nil {
				return
			}
		}
		if _, err := client.Write(input); err != nil {
			return
		}
		_, _ = client.Write(packet(0, []byte{mysql.COM_QUIT}))
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the session did not end on input %q", input)
	}
	_ = client.Close()
	<-read
	return out.Bytes()
}

// FuzzSession feeds raw bytes to a session of a front end without TLS or
// with it (withTLS), as the handshake response (login false) or as
// commands after a login: whatever they are, the session ends (no panic,
// no hang), and the front end serves the next client.
func FuzzSession(f *testing.F) {
	sslRequest := packet(1, append(binary.LittleEndian.AppendUint32(nil, mysql.CLIENT_PROTOCOL_41|mysql.CLIENT_SECURE_CONNECTION|mysql.CLIENT_SSL), make([]byte, 28)...))
	f.Add(false, false, []byte{})
	f.Add(false, false, loginPacket())
	f.Add(false, false, packet(1, []byte{0x00, 0x02}))
	f.Add(false, false, sslRequest) // an SSLRequest on a server without TLS
	f.Add(true, false, sslRequest)
	f.Add(true, false, append(slices.Clone(sslRequest), 0x16, 0x03, 0x01, 0xff, 0xff, 0, 0)) // then a broken ClientHello
	f.Add(true, false, loginPacket())                                                        // no TLS on a TLS server
	f.Add(true, true, packet(0, []byte{mysql.COM_QUERY, 'S'}))
	f.Add(false, true, packet(0, []byte{mysql.COM_QUERY, 'S', 'H', 'O', 'W'}))
	f.Add(false, true, packet(0, nil)) // an empty command packet
	f.Add(false, true, packet(0, []byte{mysql.COM_PING}))
	f.Add(false, true, packet(0, []byte{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0}))
	f.Add(false, true, packet(0, []byte{mysql.COM_STMT_PREPARE, 'x'}))
	f.Add(false, true, packet(0, []byte{mysql.COM_FIELD_LIST, 't', 0}))
	f.Add(false, true, packet(0, []byte{mysql.COM_BINLOG_DUMP, 1}))
	f.Add(false, true, packet(0, []byte{mysql.COM_BINLOG_DUMP_GTID, 1, 2}))
	f.Add(false, true, packet(0, []byte{mysql.COM_REGISTER_SLAVE}))
	f.Add(false, true, packet(0, []byte{mysql.COM_STMT_SEND_LONG_DATA, 1}))
	f.Add(false, true, packet(0, []byte{mysql.COM_STMT_RESET}))
	f.Add(false, true, []byte{0xff, 0xff, 0xff, 0, 1, 2, 3})         // a continued chunk that never ends
	f.Add(false, true, []byte{0xff, 0xff, 0xfe, 0, mysql.COM_QUERY}) // longer than the bound
	f.Add(false, true, packet(5, []byte{mysql.COM_QUERY, 'x'}))      // out of sequence
	f.Fuzz(func(t *testing.T, withTLS, login bool, input []byte) {
		s := fuzzServer()
		if withTLS {
			s = fuzzTLSServer()
		}
		runSessionOn(t, s, "127.0.0.1", login, input)
		if login {
			return
		}
		// The next client still logs in and is answered.
		out := runSessionOn(t, s, "127.0.0.1", true, packet(0, []byte{mysql.COM_QUERY, 'o', 'k'}))
		if !bytes.Contains(out, []byte("ok")) {
			t.Fatalf("a good client after input %q got %q", input, out)
		}
	})
}

// errPackets returns the ERR packets (code, message) in a server's
// output.
func errPackets(out []byte) (codes []uint16, msgs []string) {
	for len(out) >= 4 {
		n := int(out[0]) | int(out[1])<<8 | int(out[2])<<16
		if len(out) < 4+n {
			break
		}
		p := out[4 : 4+n]
		if n >= 9 && p[0] == mysql.ERR_HEADER {
			codes = append(codes, binary.LittleEndian.Uint16(p[1:3]))
			msgs = append(msgs, string(p[9:]))
		}
		out = out[4+n:]
	}
	return codes, msgs
}

func TestHostileMySQLMalformedPacket(t *testing.T) {
	out := runSession(t, "127.0.0.1", true, packet(0, nil))
	codes, msgs := errPackets(out)
	if len(codes) != 1 || codes[0] != mysql.ER_MALFORMED_PACKET {
		t.Errorf("ERR packets %v %q, want one %d", codes, msgs, mysql.ER_MALFORMED_PACKET)
	}
	out = runSession(t, "127.0.0.1", true, []byte{0xff, 0xff, 0xff, 0})
	if codes, _ := errPackets(out); len(codes) != 1 || codes[0] != mysql.ER_NET_PACKET_TOO_LARGE {
		t.Errorf("an oversized packet: ERR packets %v, want %d", codes, mysql.ER_NET_PACKET_TOO_LARGE)
	}
}

func TestNonLoopbackRefusedWithoutUsers(t *testing.T) {
	out := runSession(t, "10.1.2.3", false, loginPacket())
	codes, msgs := errPackets(out)
	if len(codes) != 1 || codes[0] != mysql.ER_HOST_NOT_PRIVILEGED || !bytes.Contains([]byte(msgs[0]), []byte("Host '10.1.2.3' is not allowed")) {
		t.Fatalf("ERR packets %v %q, want one 1130 naming the host", codes, msgs)
	}
	if len(out) != 4+9+len(msgs[0]) {
		t.Errorf("the refused client got more than the error: %q", out)
	}
	// An IPv4-mapped loopback address is loopback.
	if out := runSession(t, "::ffff:127.0.0.1", true, packet(0, []byte{mysql.COM_QUERY, 'o', 'k'})); !bytes.Contains(out, []byte("ok")) {
		t.Errorf("a mapped loopback client got %q", out)
	}
}

// TestUndecryptablePasswordIsAccessDenied: a caching_sha2_password login
// without TLS whose password is not encrypted with the node's RSA key (the
// mariadb client sends it in clear text) is refused with 1045, not an
// internal error.
func TestUndecryptablePasswordIsAccessDenied(t *testing.T) {
	u, err := authority.FromRules(config.Rule{Type: authority.RuleType, Content: map[string]any{"users": []any{
		map[string]any{"user": "sha", "password": "pw", "authenticationMethodName": "caching_sha2_password"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Executor: echoExecutor{}, Users: func() (*authority.Users, error) { return u, nil },
		HandshakeTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var p []byte
	p = binary.LittleEndian.AppendUint32(p, mysql.CLIENT_PROTOCOL_41|mysql.CLIENT_SECURE_CONNECTION|mysql.CLIENT_PLUGIN_AUTH)
	p = binary.LittleEndian.AppendUint32(p, 1<<24)
	p = append(p, 33)
	p = append(p, make([]byte, 23)...)
	p = append(p, "sha\x00"...)
	p = append(p, 32)
	p = append(p, bytes.Repeat([]byte{7}, 32)...) // a scramble the empty cache cannot confirm
	p = append(p, mysql.AUTH_CACHING_SHA2_PASSWORD+"\x00"...)
	input := append(packet(1, p), packet(3, []byte("pw\x00"))...) // the password in clear text
	out := runSessionOn(t, s, "127.0.0.1", false, input)
	codes, msgs := errPackets(out)
	if len(codes) != 1 || codes[0] != mysql.ER_ACCESS_DENIED_ERROR {
		t.Errorf("ERR packets %v %q, want one 1045", codes, msgs)
	}
}
