package pgfront

import (
	"bytes"
	"context"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardkeeper/shardkeeper/internal/console"
)

// echoExec answers every statement with one row holding its text.
type echoExec struct{}

func (echoExec) Execute(_ context.Context, _ *console.Session, q string) (*console.Result, error) {
	if q == "FAIL" {
		return nil, &sqlerr.Error{SQLState: "42000", Message: "failed"}
	}
	return &console.Result{Columns: []console.Column{{Name: "q"}, {Name: "n", Type: console.Int64}}, Rows: [][]*string{{&q, nil}}}, nil
}

// encode returns the frontend messages as a client sends them.
func encode(t testing.TB, msgs ...pgproto3.FrontendMessage) []byte {
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

var startupMsg = &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "fuzz", "database": "db"}}

// runSession sends in on a fresh loopback connection to s, closes the
// client's sending side when halfClose is set and returns everything the
// server answered; it fails the test when the server's goroutine has not
// returned within 10 seconds. A client that closes its sending side is
// gone for the server (as for MySQL and PostgreSQL), which cancels the
// statement it runs: input whose answers are wanted ends with Terminate
// instead.
func runSession(t testing.TB, s *Server, ln net.Listener, in []byte, halfClose bool) []byte {
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.serveConn(context.Background(), srv)
		_ = srv.Close()
	}()
	out := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(client)
		out <- b
	}()
	_ = client.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = client.Write(in)
	if halfClose {
		_ = client.(*net.TCPConn).CloseWrite()
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the session on input %q did not end", in)
	}
	return <-out
}

func listen(t testing.TB) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// FuzzMessages feeds arbitrary bytes after a valid startup (or as the
// startup) to a server: no panic, no hang, and the server serves a valid
// session afterwards.
func FuzzMessages(f *testing.F) {
	s, err := New(Config{Executor: echoExec{}, Logger: slog.New(slog.DiscardHandler), StartupTimeout: 5 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close(context.Background()) })
	ln := listen(f)
	f.Add(false, encode(f, &pgproto3.Query{String: "SHOW A; SHOW B"}))
	f.Add(false, encode(f, &pgproto3.Parse{Query: "SHOW A"}, &pgproto3.Bind{ResultFormatCodes: []int16{1}}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{MaxRows: 1}, &pgproto3.Sync{}))
	f.Add(false, encode(f, &pgproto3.Parse{Name: "s", Query: "FAIL"}, &pgproto3.Describe{ObjectType: 'S', Name: "s"}, &pgproto3.Execute{}, &pgproto3.Sync{}, &pgproto3.Close{ObjectType: 'S', Name: "s"}, &pgproto3.Terminate{}))
	f.Add(false, []byte("Q\x00\x00\x00\x03"))
	f.Add(false, []byte("Z\x00\x00\x00\x04"))
	f.Add(false, []byte("B\x00\x00\x00\x08\x00\x00\xff\xff"))
	f.Add(false, []byte("Q\x7f\xff\xff\xffSHOW"))
	f.Add(true, []byte("\x00\x00\x00\x08\x04\xd2\x16\x2f"))
	f.Add(true, []byte("\x00\x00\x00\x10\x04\xd2\x16\x2e\x00\x00\x00\x01abcd"))
	f.Add(true, []byte("\xff\xff\xff\xff"))
	valid := encode(f, startupMsg, &pgproto3.Query{String: "SHOW OK"}, &pgproto3.Terminate{})
	f.Fuzz(func(t *testing.T, asStartup bool, data []byte) {
		in := data
		if !asStartup {
			in = append(encode(t, startupMsg), data...)
		}
		runSession(t, s, ln, in, true)
		if out := runSession(t, s, ln, valid, false); !bytes.Contains(out, []byte("SHOW OK")) {
			t.Fatalf("a valid session after input %q got %q", data, out)
		}
	})
}

// TestMalformedMessage: a message of an unknown type ends its session with
// FATAL 08P01.
func TestMalformedMessage(t *testing.T) {
	s, err := New(Config{Executor: echoExec{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	out := runSession(t, s, listen(t), append(encode(t, startupMsg), "Z\x00\x00\x00\x04"...), true)
	fe := pgproto3.NewFrontend(bytes.NewReader(out), io.Discard)
	var last pgproto3.BackendMessage
	for {
		m, err := fe.Receive()
		if err != nil {
			break
		}
		last = m
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			if e.Severity != "FATAL" || e.Code != "08P01" {
				t.Fatalf("error %+v, want FATAL 08P01", e)
			}
			return
		}
	}
	t.Fatalf("no FATAL error for a malformed message; last message %T", last)
}
