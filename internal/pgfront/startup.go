package pgfront

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/process"
)

// maxStartupPacket is PostgreSQL's MAX_STARTUP_PACKET_LENGTH.
const maxStartupPacket = 10_000

// SCRAM mechanisms as PostgreSQL names them.
const (
	mechSCRAM     = "SCRAM-SHA-256"
	mechSCRAMPlus = "SCRAM-SHA-256-PLUS"
	scramIters    = 4096 // PostgreSQL's scram_iterations default
)

// fatal is a startup failure sent to the client as a FATAL ErrorResponse.
type fatal struct {
	code, msg string
}

func (f *fatal) Error() string { return f.msg }

// refuse answers a connection over Config.MaxConnections. A cancel request
// still gets through a full node: it is what frees one. Anything else is
// refused after its first packet.
func (s *Server) refuse(_ context.Context, nc net.Conn) {
	_ = nc.SetDeadline(time.Now().Add(s.c.StartupTimeout))
	if msg, err := readStartup(nc); err == nil {
		if m, ok := msg.(*pgproto3.CancelRequest); ok {
			s.cancelRequest(m.ProcessID, m.SecretKey)
			return
		}
	}
	s.c.Metrics.Refused("postgresql")
	s.log.Warn("postgresql: connection refused: too many clients", "client", nc.RemoteAddr().String(), "max_conns", s.c.MaxConnections)
	sendFatal(nc, &fatal{"53300", "sorry, too many clients already"})
}

// serveConn serves one accepted connection until it ends; ctx ends its
// statements.
func (s *Server) serveConn(ctx context.Context, nc net.Conn) {
	_ = nc.SetDeadline(time.Now().Add(s.c.StartupTimeout))
	sess, err := s.startup(ctx, nc)
	if err != nil {
		var f *fatal
		switch {
		case errors.Is(err, errCancelRequest), errors.Is(err, errEvicted):
		case errors.As(err, &f):
			sendFatal(sess.conn(nc), f)
		case errors.Is(err, io.EOF), sess == nil:
			s.log.Debug("postgresql: connection ended during startup", "client", nc.RemoteAddr().String(), "err", err)
		default:
			s.log.Info("postgresql: connection ended during startup", "client", nc.RemoteAddr().String(), "err", err)
			sendFatal(sess.conn(nc), &fatal{"08P01", "invalid startup: " + err.Error()})
		}
		return
	}
	_ = sess.nc.SetDeadline(time.Time{})
	sess.run()
}

// errCancelRequest ends a connection that carried a CancelRequest.
var errCancelRequest = errors.New("cancel request")

// errEvicted ends a connection closed while it was logging in, to make
// room for a newer one (connserver's pending share).
var errEvicted = errors.New("evicted while logging in")

// sendFatal writes one FATAL ErrorResponse to w, best effort.
func sendFatal(w io.Writer, f *fatal) {
	be := pgproto3.NewBackend(bytes.NewReader(nil), w)
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: f.code, Message: f.msg})
	_ = be.Flush()
}

// conn is the connection to answer on: the session's (TLS) connection
// once startup made one, else nc.
func (sess *session) conn(nc net.Conn) net.Conn {
	if sess != nil && sess.nc != nil {
		return sess.nc
	}
	return nc
}

// readStartup reads one length-prefixed startup packet from r and decodes
// it with pgproto3. It reads exactly the packet: nothing sent after it (a
// client's first TLS bytes) is consumed.
func readStartup(r io.Reader) (pgproto3.FrontendMessage, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(head[:])))
	if n < 8 || n > maxStartupPacket {
		return nil, fmt.Errorf("startup packet length %d: want 8 to %d bytes", n, maxStartupPacket)
	}
	buf := make([]byte, n)
	copy(buf, head[:])
	if _, err := io.ReadFull(r, buf[4:]); err != nil {
		return nil, fmt.Errorf("startup packet: %w", err)
	}
	return pgproto3.NewBackend(bytes.NewReader(buf), nil).ReceiveStartupMessage()
}

// startup runs the startup and authentication of nc and returns the
// session, ready for statements. On error the returned session, when not
// nil, has the connection to send the error on.
func (s *Server) startup(ctx context.Context, nc net.Conn) (*session, error) {
	watched := &connserver.WatchedConn{Conn: nc}
	sess := &session{srv: s, raw: nc, nc: watched, watched: watched, ctx: ctx}
	client := remoteAddr(nc)
	tlsDone := false
	for {
		msg, err := readStartup(sess.nc)
		if err != nil {
			return sess, err
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if tlsDone || s.c.TLS == nil {
				if _, err := sess.nc.Write([]byte{'N'}); err != nil {
					return sess, err
				}
				continue
			}
			if _, err := sess.nc.Write([]byte{'S'}); err != nil {
				return sess, err
			}
			tc := tls.Server(watched, s.c.TLS)
			if err := tc.Handshake(); err != nil {
				return nil, fmt.Errorf("tls handshake: %w", err)
			}
			sess.nc, tlsDone = tc, true
		case *pgproto3.GSSEncRequest:
			if _, err := sess.nc.Write([]byte{'N'}); err != nil {
				return sess, err
			}
		case *pgproto3.CancelRequest:
			if !s.cancelRequest(m.ProcessID, m.SecretKey) {
				s.log.Info("postgresql: cancel request for no session of this node", "client", client.String())
			}
			return nil, errCancelRequest
		case *pgproto3.StartupMessage:
			return sess, s.authenticate(sess, m, client, tlsDone)
		default:
			return sess, fmt.Errorf("unexpected startup message %T", msg)
		}
	}
}

// remoteAddr is nc's client address (invalid when it is not an IP).
func remoteAddr(nc net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// NoUsersNotice is the warning every session of loopback-only mode (no
// users configured) gets at login.
const NoUsersNotice = "no users are configured on this node (the authority rule has none), so no password is asked for or checked: " +
	"every loopback client gets in under any name and is an admin; add users to the authority rule (README: Operating it with DistSQL)"

// authenticate checks the StartupMessage m's user against the configured
// users and finishes the startup: AuthenticationOk, ParameterStatus,
// BackendKeyData, ReadyForQuery.
func (s *Server) authenticate(sess *session, m *pgproto3.StartupMessage, client netip.Addr, viaTLS bool) error {
	user, database := m.Parameters["user"], m.Parameters["database"]
	if user == "" {
		return &fatal{"28000", "no PostgreSQL user name specified in startup packet"}
	}
	if database == "" {
		database = user
	}
	sess.in = &msgReader{r: sess.nc, max: int64(s.c.MaxMessageSize)}
	be := pgproto3.NewBackend(sess.in, sess.nc)
	be.SetMaxBodyLen(s.c.MaxMessageSize)
	sess.be = be
	if m.ProtocolVersion != pgproto3.ProtocolVersion30 || hasProtocolOptions(m.Parameters) {
		be.Send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: protocolOptions(m.Parameters)})
	}
	loopback := client.IsValid() && client.IsLoopback()
	host := client.String()
	if !client.IsValid() {
		host = sess.nc.RemoteAddr().String()
	}
	var users *authority.Users
	if s.c.Users != nil {
		var err error
		if users, err = s.c.Users(); err != nil {
			s.log.Error("postgresql: connection refused: the users are not known", "client", host, "user", user, "err", err)
			return &fatal{"28000", "this node cannot check passwords: " + err.Error()}
		}
	}
	switch {
	case users.Empty():
		if !loopback {
			s.log.Warn("postgresql: connection refused: no users are configured, so only loopback clients may connect", "client", host, "user", user)
			return &fatal{"28000", fmt.Sprintf("no users are configured on this node (global.yaml's authority rule), so it accepts only loopback clients, not %s: add users to the authority rule or connect from the node's host", host)}
		}
	case !loopback && !viaTLS:
		s.log.Warn("postgresql: connection refused: a client from another host without TLS", "client", host, "user", user)
		if s.c.TLS == nil {
			return &fatal{"28000", fmt.Sprintf("connections from other hosts than loopback need TLS, and this node serves none: start it with --tls-cert and --tls-key, then connect with sslmode=require (client %s)", host)}
		}
		return &fatal{"28000", fmt.Sprintf("connections from other hosts than loopback need TLS: connect with sslmode=require or verify-full (client %s)", host)}
	default:
		if err := s.checkPassword(sess, be, users, user, client, viaTLS); err != nil {
			return err
		}
	}
	// Logged in before the client hears so: a client that then opens its
	// next connection must not find this one still counted as pending.
	if !s.conns.LoggedIn(sess.raw) {
		return errEvicted
	}
	be.Send(&pgproto3.AuthenticationOk{})
	if users.Empty() {
		// A PostgreSQL client sends a password only when asked, so none
		// can be told apart: every session of loopback-only mode hears
		// once, at login, that nothing checks one.
		be.Send(&pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: "01000", Message: NoUsersNotice})
	}
	sess.console = console.Session{User: user, Host: host, Database: database, Protocol: "PostgreSQL"}
	for _, p := range [][2]string{
		{"server_version", ServerVersion},
		{"server_encoding", "UTF8"},
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"IntervalStyle", "postgres"},
		{"TimeZone", "UTC"},
		{"integer_datetimes", "on"},
		{"standard_conforming_strings", "on"},
		{"is_superuser", "on"},
		{"session_authorization", user},
		{"application_name", m.Parameters["application_name"]},
	} {
		be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	s.register(sess)
	be.Send(&pgproto3.BackendKeyData{ProcessID: sess.pid, SecretKey: sess.secret})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := be.Flush(); err != nil {
		s.unregister(sess)
		return err
	}
	sess.ctx, sess.end = context.WithCancel(sess.ctx)
	if s.c.Processes != nil {
		sess.removeProc = s.c.Processes.Add(process.Process{
			ID: sess.console.ID, Username: user, Hostname: host, DatabaseName: database,
			StartMillis: time.Now().UnixMilli(), Idle: true,
		}, sess.kill, sess.cancelStatement)
	}
	sess.ended = s.c.Metrics.SessionStarted("postgresql")
	s.log.Debug("postgresql: session started", "session", sess.console.ID, "user", user, "client", host, "tls", viaTLS)
	return nil
}

func hasProtocolOptions(params map[string]string) bool { return len(protocolOptions(params)) > 0 }

// protocolOptions are the _pq_. options of a startup message, which this
// server does not know.
func protocolOptions(params map[string]string) []string {
	var opts []string
	for k := range params {
		if len(k) > 4 && k[:4] == "_pq_" {
			opts = append(opts, k)
		}
	}
	return opts
}

// checkPassword authenticates user with the password method its
// authority entry names (its AuthenticationMethod, as upstream's
// PostgreSQL authenticator types): MD5, PASSWORD (clear text, which only
// reaches here over TLS or loopback), and SCRAM-SHA-256 for SCRAM_SHA256,
// no method or any other.
func (s *Server) checkPassword(sess *session, be *pgproto3.Backend, users *authority.Users, user string, client netip.Addr, viaTLS bool) error {
	u, known := users.Lookup(user, client)
	password := u.Password
	if !known {
		password = rand.Text()
	}
	reason := "wrong password"
	if !known {
		reason = "no user " + user + " may connect from " + client.String()
	}
	failed := func() error {
		s.c.Metrics.LoginFailed("postgresql")
		s.log.Warn("postgresql: authentication failed", "user", user, "client", client.String(), "reason", reason)
		return &fatal{"28P01", fmt.Sprintf("password authentication failed for user %q", user)}
	}
	switch strings.ToUpper(u.AuthenticationMethod) {
	case "MD5":
		salt := make([]byte, 4)
		_, _ = rand.Read(salt)
		be.Send(&pgproto3.AuthenticationMD5Password{Salt: [4]byte(salt)})
		got, err := passwordMessage(be, pgproto3.AuthTypeMD5Password)
		if err != nil {
			return err
		}
		inner := md5.Sum([]byte(password + user))
		outer := md5.Sum(append([]byte(hex.EncodeToString(inner[:])), salt...))
		if subtle.ConstantTimeCompare([]byte(got), []byte("md5"+hex.EncodeToString(outer[:]))) != 1 {
			return failed()
		}
		return nil
	case "PASSWORD":
		be.Send(&pgproto3.AuthenticationCleartextPassword{})
		got, err := passwordMessage(be, pgproto3.AuthTypeCleartextPassword)
		if err != nil {
			return err
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(password)) != 1 {
			return failed()
		}
		return nil
	}
	return s.scram(sess, be, user, password, viaTLS, failed)
}

// passwordMessage asks for the client's PasswordMessage after the
// authentication request sent on be.
func passwordMessage(be *pgproto3.Backend, authType uint32) (string, error) {
	if err := be.Flush(); err != nil {
		return "", err
	}
	if err := be.SetAuthType(authType); err != nil {
		return "", err
	}
	msg, err := be.Receive()
	if err != nil {
		return "", err
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		return "", &fatal{"08P01", fmt.Sprintf("expected a password message, got %T", msg)}
	}
	return pm.Password, nil
}

// scram runs a SCRAM-SHA-256 exchange for user (RFC 5802, 7677, as
// PostgreSQL does it: the user name inside SCRAM is ignored). An unknown
// user goes through the same exchange with a random password, so that
// the answer does not tell which users exist. failed reports a failed
// exchange.
func (s *Server) scram(sess *session, be *pgproto3.Backend, user, password string, viaTLS bool, failed func() error) error {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	sc, err := scram.SHA256.NewClient(user, password, "")
	if err != nil {
		// A password SASLprep refuses is used as it is, as libpq does.
		if sc, err = scram.SHA256.NewClientUnprepped(user, password, ""); err != nil {
			return fmt.Errorf("scram: %w", err)
		}
	}
	creds, err := sc.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: scramIters})
	if err != nil {
		return fmt.Errorf("scram: %w", err)
	}
	srv, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return creds, nil })
	if err != nil {
		return fmt.Errorf("scram: %w", err)
	}
	mechs := []string{mechSCRAM}
	conv := srv.NewConversation()
	if cb, ok := s.channelBinding(); ok && viaTLS {
		mechs = []string{mechSCRAMPlus, mechSCRAM}
		conv = srv.NewConversationWithChannelBinding(cb)
	}
	be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: mechs})
	if err := be.Flush(); err != nil {
		return err
	}
	if err := be.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
		return err
	}
	msg, err := be.Receive()
	if err != nil {
		return err
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok {
		return &fatal{"08P01", fmt.Sprintf("expected a SASL initial response, got %T", msg)}
	}
	if first.AuthMechanism != mechSCRAM && (first.AuthMechanism != mechSCRAMPlus || len(mechs) == 1) {
		return &fatal{"08P01", fmt.Sprintf("client selected an invalid SASL authentication mechanism %q", first.AuthMechanism)}
	}
	out, err := conv.Step(string(first.Data))
	if err != nil {
		s.c.Metrics.LoginFailed("postgresql")
		s.log.Warn("postgresql: authentication failed", "user", user, "reason", "scram client-first: "+err.Error())
		return &fatal{"28P01", fmt.Sprintf("password authentication failed for user %q", user)}
	}
	be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(out)})
	if err := be.Flush(); err != nil {
		return err
	}
	if err := be.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
		return err
	}
	msg, err = be.Receive()
	if err != nil {
		return err
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return &fatal{"08P01", fmt.Sprintf("expected a SASL response, got %T", msg)}
	}
	out, err = conv.Step(string(final.Data))
	if err != nil || !conv.Valid() {
		return failed()
	}
	be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(out)})
	_ = be.SetAuthType(pgproto3.AuthTypeOk)
	return nil
}

// channelBinding is the tls-server-end-point channel binding (RFC 5929)
// of the server's certificate; ok is false when Config.TLS does not have
// exactly one certificate (with several, which one a client got is not
// known here), and SCRAM-SHA-256-PLUS is then not offered.
func (s *Server) channelBinding() (scram.ChannelBinding, bool) {
	c := s.c.TLS
	if c == nil || len(c.Certificates) != 1 || c.GetCertificate != nil || len(c.Certificates[0].Certificate) == 0 {
		return scram.ChannelBinding{}, false
	}
	leaf, err := x509.ParseCertificate(c.Certificates[0].Certificate[0])
	if err != nil {
		return scram.ChannelBinding{}, false
	}
	// The library hashes a certificate the way RFC 5929 says when it is
	// the peer's: hand it ours as such.
	cb, err := scram.NewTLSServerEndpointBinding(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}})
	return cb, err == nil
}
