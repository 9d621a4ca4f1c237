package pgfront

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/redact"
)

// maxPrepared bounds a session's named prepared statements and portals
// (each).
const maxPrepared = 1000

// PostgreSQL type OIDs of the result columns.
const (
	oidInt8 = 20
	oidText = 25
)

// session is one authenticated connection.
type session struct {
	srv *Server
	raw net.Conn // the accepted connection, as the connection server counts it
	nc  net.Conn // what the session reads and writes: watched, or TLS over it
	// watched is raw as the session reads it, watched while a statement
	// runs so that a client that closes its connection cancels it.
	watched    *connserver.WatchedConn
	be         *pgproto3.Backend
	in         *msgReader // under be: the statement budget
	console    console.Session
	pid        uint32
	secret     []byte
	ctx        context.Context // ends when the session is killed or the server closes
	end        context.CancelFunc
	removeProc func()
	ended      func() // uncounts the session in Config.Metrics; nil before login

	mu        sync.Mutex
	stmtStop  context.CancelFunc // cancels the running statement; nil when none runs
	cancelled bool               // a CancelRequest cancelled the running statement
	killed    bool

	stmts   map[string]*prepared
	portals map[string]*portal
	failed  bool // an extended-protocol error: skip messages until Sync
}

// prepared is a parsed statement. pending is the outcome of a run made
// for a Describe, handed to the next portal bound to it.
type prepared struct {
	query   string
	pending *outcome
}

// portal is a bound statement: its outcome once run and how many rows of
// it were sent.
type portal struct {
	stmt    *prepared
	formats []int16 // result format codes as Bind gave them
	out     *outcome
	sent    int
}

type outcome struct {
	res *console.Result
	err error
}

// cancelStatement cancels the running statement, if any (CancelRequest).
func (sess *session) cancelStatement() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.stmtStop != nil {
		sess.cancelled = true
		sess.stmtStop()
	}
}

// kill ends the session (KILL from SHOW PROCESSLIST): its statement is
// cancelled and its connection closed.
func (sess *session) kill() {
	sess.mu.Lock()
	sess.killed = true
	sess.mu.Unlock()
	sess.end()
	_ = sess.nc.Close()
}

// run serves statements until the client terminates, the connection
// fails or the session is killed.
func (sess *session) run() {
	s := sess.srv
	defer func() {
		s.unregister(sess)
		if sess.ended != nil {
			sess.ended()
		}
		if sess.removeProc != nil {
			sess.removeProc()
		}
		sess.end()
	}()
	sess.stmts, sess.portals = map[string]*prepared{}, map[string]*portal{}
	if sess.in != nil {
		sess.in.stmts, sess.in.ctx = s.c.Budget, sess.ctx
		defer sess.in.release()
	}
	for {
		_ = sess.nc.SetReadDeadline(time.Now().Add(s.c.IdleTimeout))
		msg, err := sess.be.Receive()
		if err != nil {
			sess.mu.Lock()
			killed := sess.killed
			sess.mu.Unlock()
			var f *fatal
			switch {
			case errors.As(err, &f):
				s.log.Warn("postgresql: session ended: a message finds no room in the statement budget", "session", sess.console.ID, "err", err)
				sess.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: f.code, Message: f.msg})
				_ = sess.be.Flush()
			case killed:
				s.log.Info("postgresql: session killed", "session", sess.console.ID)
			case errors.Is(err, os.ErrDeadlineExceeded):
				s.log.Info("postgresql: session closed: idle too long", "session", sess.console.ID, "idle_timeout", s.c.IdleTimeout)
				_ = sess.nc.SetWriteDeadline(time.Now().Add(time.Second))
				sess.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P05", Message: "terminating connection due to idle-session timeout"})
				_ = sess.be.Flush()
			case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || sess.ctx.Err() != nil:
				s.log.Debug("postgresql: session ended", "session", sess.console.ID, "err", err)
			default:
				s.log.Info("postgresql: session ended on a malformed message", "session", sess.console.ID, "err", err)
				sess.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "08P01", Message: "invalid message: " + err.Error()})
				_ = sess.be.Flush()
			}
			return
		}
		if _, ok := msg.(*pgproto3.Terminate); ok {
			return
		}
		if err := sess.handle(msg); err != nil {
			var f *fatal
			if errors.As(err, &f) {
				s.log.Info("postgresql: session ended", "session", sess.console.ID, "err", err)
				sess.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: f.code, Message: f.msg})
			}
			_ = sess.be.Flush()
			return
		}
	}
}

// handle answers one message. An error ends the session (a *fatal is sent
// to the client first).
func (sess *session) handle(msg pgproto3.FrontendMessage) error {
	if sess.failed {
		if _, ok := msg.(*pgproto3.Sync); !ok {
			return nil
		}
	}
	switch m := msg.(type) {
	case *pgproto3.Query:
		sess.simpleQuery(m.String)
		sess.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		return sess.be.Flush()
	case *pgproto3.Sync:
		sess.failed = false
		delete(sess.portals, "") // the unnamed portal ends with its transaction
		sess.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		return sess.be.Flush()
	case *pgproto3.Flush:
		return sess.be.Flush()
	case *pgproto3.Parse:
		sess.parse(m)
	case *pgproto3.Bind:
		sess.bind(m)
	case *pgproto3.Describe:
		sess.describe(m)
	case *pgproto3.Execute:
		sess.execute(m)
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			delete(sess.stmts, m.Name)
		} else {
			delete(sess.portals, m.Name)
		}
		sess.be.Send(&pgproto3.CloseComplete{})
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// Only meaningful during COPY, which no statement starts:
		// PostgreSQL ignores them.
	default:
		return &fatal{"08P01", fmt.Sprintf("unsupported message %T", msg)}
	}
	return nil
}

// fail sends err as an ErrorResponse and, in the extended protocol, skips
// to the next Sync.
func (sess *session) fail(err error, extended bool) {
	sess.be.Send(errorResponse(err))
	sess.failed = extended
}

// errorResponse is err as the client sees it: a *sqlerr.Error with its
// SQL state and position, anything else as an internal error (HY000).
func errorResponse(err error) *pgproto3.ErrorResponse {
	e := &pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "HY000", Message: err.Error()}
	var ce *sqlerr.Error
	if errors.As(err, &ce) {
		if ce.SQLState != "" {
			e.Code = ce.SQLState
		}
		e.Message, e.Position = ce.Message, int32(ce.Position)
	}
	return e
}

// simpleQuery runs the statements of a Query message in order, the first
// failure ending it.
func (sess *session) simpleQuery(text string) {
	delete(sess.stmts, "")
	delete(sess.portals, "")
	stmts := split(text)
	if len(stmts) == 0 {
		sess.be.Send(&pgproto3.EmptyQueryResponse{})
		return
	}
	for _, p := range stmts {
		q := p.text
		res, err := sess.exec(q)
		if err != nil {
			// A position is the statement's; the client counts in the
			// whole query text.
			var ce *sqlerr.Error
			if errors.As(err, &ce) && ce.Position > 0 && p.start > 0 {
				moved := *ce
				moved.Position += utf8.RuneCountInString(text[:p.start])
				err = &moved
			}
			sess.fail(err, false)
			return
		}
		if len(res.Columns) > 0 {
			sess.be.Send(rowDescription(res.Columns, nil))
		}
		if err := sess.sendRows(res, nil, 0, 0); err != nil {
			sess.fail(err, false)
			return
		}
		sess.complete(q, res)
	}
}

// exec runs one statement as the session's current process, cancellable
// by a CancelRequest (57014) and by the session's end (57P01).
func (sess *session) exec(q string) (*console.Result, error) {
	ctx, stop := context.WithCancel(sess.ctx)
	defer stop()
	sess.mu.Lock()
	sess.stmtStop, sess.cancelled = stop, false
	sess.mu.Unlock()
	procs := sess.srv.c.Processes
	if procs != nil {
		// Masked: the table is shown and written to the registry.
		masked := redact.Statement(q)
		procs.Update(sess.console.ID, func(p *process.Process) { p.SQL, p.Idle = masked, false })
	}
	id := sess.console.ID // the statement may change the session meanwhile
	stopWatch := sess.watched.Watch(func() {
		sess.srv.log.Info("postgresql: the client closed its connection during a statement; the statement is cancelled", "session", id)
		stop()
	})
	res, err := console.ExecuteCancellable(ctx, sess.srv.log, sess.srv.c.Executor, &sess.console, q)
	stopWatch()
	if procs != nil {
		procs.Update(sess.console.ID, func(p *process.Process) {
			p.Idle, p.DatabaseName = true, sess.console.Database
		})
	}
	sess.mu.Lock()
	cancelled := sess.cancelled
	sess.stmtStop, sess.cancelled = nil, false
	sess.mu.Unlock()
	switch {
	case err != nil && cancelled:
		return nil, &sqlerr.Error{SQLState: "57014", Message: "canceling statement due to user request"}
	case err != nil && sess.ctx.Err() != nil:
		return nil, &sqlerr.Error{SQLState: "57P01", Message: "terminating connection due to administrator command"}
	case err != nil:
		return nil, err
	case res == nil:
		return &console.Result{}, nil
	}
	return res, nil
}

// rowDescription describes cols; formats are the Bind's result format
// codes (nil: text).
func rowDescription(cols []console.Column, formats []int16) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{Fields: make([]pgproto3.FieldDescription, len(cols))}
	for i, c := range cols {
		f := pgproto3.FieldDescription{Name: []byte(c.Name), DataTypeOID: oidText, DataTypeSize: -1, TypeModifier: -1, Format: format(formats, i)}
		if c.Type == console.Int64 {
			f.DataTypeOID, f.DataTypeSize = oidInt8, 8
		}
		rd.Fields[i] = f
	}
	return rd
}

// format is column i's format code under a Bind's result format codes:
// none means text, one applies to every column.
func format(formats []int16, i int) int16 {
	switch len(formats) {
	case 0:
		return 0
	case 1:
		return formats[0]
	}
	return formats[i]
}

// sendRows sends res's rows from index from on, at most max (0: all), in
// the format codes formats.
func (sess *session) sendRows(res *console.Result, formats []int16, from, max int) error {
	rows := res.Rows[from:]
	if max > 0 && len(rows) > max {
		rows = rows[:max]
	}
	for _, row := range rows {
		if len(row) != len(res.Columns) {
			return fmt.Errorf("a result row has %d values for %d columns", len(row), len(res.Columns))
		}
		dr := &pgproto3.DataRow{Values: make([][]byte, len(row))}
		for i, v := range row {
			if v == nil {
				continue
			}
			if format(formats, i) == 1 && res.Columns[i].Type == console.Int64 {
				n, err := strconv.ParseInt(*v, 10, 64)
				if err != nil {
					return fmt.Errorf("column %s: value %q is not an int8", res.Columns[i].Name, *v)
				}
				dr.Values[i] = binary.BigEndian.AppendUint64(nil, uint64(n))
				continue
			}
			dr.Values[i] = []byte(*v)
		}
		sess.be.Send(dr)
	}
	return nil
}

// complete sends res's NoticeResponses and CommandComplete.
func (sess *session) complete(q string, res *console.Result) {
	for _, w := range res.Warnings {
		sess.be.Send(&pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: "01000", Message: w})
	}
	sess.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(commandTag(q, res))})
}

// commandTag is "SELECT n" for a result set, otherwise the statement's
// first keyword, followed by the affected rows when there are any.
func commandTag(q string, res *console.Result) string {
	if len(res.Columns) > 0 {
		return "SELECT " + strconv.Itoa(len(res.Rows))
	}
	word := strings.ToUpper(firstWord(q))
	if tag, ok := databaseTag(word, q); ok {
		return tag
	}
	if res.Affected > 0 {
		return word + " " + strconv.FormatUint(res.Affected, 10)
	}
	return word
}

func firstWord(q string) string {
	q = strings.TrimSpace(stripComments(q))
	end := strings.IndexFunc(q, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_') })
	if end < 0 {
		end = len(q)
	}
	if end == 0 {
		return "OK"
	}
	return q[:end]
}

func (sess *session) parse(m *pgproto3.Parse) {
	if len(m.ParameterOIDs) > 0 {
		sess.fail(&sqlerr.Error{SQLState: "0A000", Message: "statement parameters ($1...) are not supported: DistSQL statements take their values inline"}, true)
		return
	}
	if _, ok := sess.stmts[m.Name]; !ok && m.Name != "" && len(sess.stmts) >= maxPrepared {
		sess.fail(tooMany("prepared statements"), true)
		return
	}
	if m.Name != "" {
		if _, ok := sess.stmts[m.Name]; ok {
			sess.fail(&sqlerr.Error{SQLState: "42P05", Message: fmt.Sprintf("prepared statement %q already exists", m.Name)}, true)
			return
		}
	}
	stmts := Split(m.Query)
	if len(stmts) > 1 {
		sess.fail(&sqlerr.Error{SQLState: "42601", Message: "cannot insert multiple commands into a prepared statement"}, true)
		return
	}
	q := ""
	if len(stmts) == 1 {
		q = stmts[0]
	}
	sess.stmts[m.Name] = &prepared{query: q}
	sess.be.Send(&pgproto3.ParseComplete{})
}

func (sess *session) bind(m *pgproto3.Bind) {
	ps, ok := sess.stmts[m.PreparedStatement]
	if !ok {
		sess.fail(noPrepared(m.PreparedStatement), true)
		return
	}
	if len(m.Parameters) > 0 {
		sess.fail(&sqlerr.Error{SQLState: "08P01", Message: fmt.Sprintf("bind message supplies %d parameters, but the statement requires 0", len(m.Parameters))}, true)
		return
	}
	for _, f := range m.ResultFormatCodes {
		if f != 0 && f != 1 {
			sess.fail(&sqlerr.Error{SQLState: "22023", Message: fmt.Sprintf("unsupported format code: %d", f)}, true)
			return
		}
	}
	if _, ok := sess.portals[m.DestinationPortal]; !ok && m.DestinationPortal != "" && len(sess.portals) >= maxPrepared {
		sess.fail(tooMany("portals"), true)
		return
	}
	p := &portal{stmt: ps, formats: append([]int16(nil), m.ResultFormatCodes...), out: ps.pending}
	ps.pending = nil
	sess.portals[m.DestinationPortal] = p
	sess.be.Send(&pgproto3.BindComplete{})
}

// run runs ps's statement for a Describe or Execute; an empty statement
// has an empty result.
func (sess *session) runPrepared(ps *prepared) *outcome {
	if ps.query == "" {
		return &outcome{res: &console.Result{}}
	}
	res, err := sess.exec(ps.query)
	return &outcome{res: res, err: err}
}

func (sess *session) describe(m *pgproto3.Describe) {
	var (
		out     *outcome
		formats []int16
	)
	if m.ObjectType == 'S' {
		ps, ok := sess.stmts[m.Name]
		if !ok {
			sess.fail(noPrepared(m.Name), true)
			return
		}
		if ps.pending == nil {
			ps.pending = sess.runPrepared(ps)
		}
		out = ps.pending
		if out.err != nil {
			ps.pending = nil
		}
		sess.be.Send(&pgproto3.ParameterDescription{})
	} else {
		p, ok := sess.portals[m.Name]
		if !ok {
			sess.fail(noPortal(m.Name), true)
			return
		}
		if p.out == nil {
			p.out = sess.runPrepared(p.stmt)
		}
		out, formats = p.out, p.formats
	}
	if out.err != nil {
		sess.fail(out.err, true)
		return
	}
	if len(out.res.Columns) == 0 {
		sess.be.Send(&pgproto3.NoData{})
		return
	}
	if len(formats) > 1 && len(formats) != len(out.res.Columns) {
		sess.fail(formatsMismatch(len(formats), len(out.res.Columns)), true)
		return
	}
	sess.be.Send(rowDescription(out.res.Columns, formats))
}

func (sess *session) execute(m *pgproto3.Execute) {
	p, ok := sess.portals[m.Portal]
	if !ok {
		sess.fail(noPortal(m.Portal), true)
		return
	}
	if p.stmt.query == "" {
		sess.be.Send(&pgproto3.EmptyQueryResponse{})
		return
	}
	if p.out == nil {
		p.out = sess.runPrepared(p.stmt)
	}
	if p.out.err != nil {
		sess.fail(p.out.err, true)
		return
	}
	res := p.out.res
	if len(p.formats) > 1 && len(p.formats) != len(res.Columns) {
		sess.fail(formatsMismatch(len(p.formats), len(res.Columns)), true)
		return
	}
	if err := sess.sendRows(res, p.formats, p.sent, int(m.MaxRows)); err != nil {
		sess.fail(err, true)
		return
	}
	if m.MaxRows > 0 && len(res.Rows)-p.sent > int(m.MaxRows) {
		p.sent += int(m.MaxRows)
		sess.be.Send(&pgproto3.PortalSuspended{})
		return
	}
	p.sent = len(res.Rows)
	sess.complete(p.stmt.query, res)
}

// The extended protocol's refusals that several messages share, with
// PostgreSQL's SQL states and texts.

// noPrepared is invalid_sql_statement_name (26000).
func noPrepared(name string) *sqlerr.Error {
	return &sqlerr.Error{SQLState: "26000", Message: fmt.Sprintf("prepared statement %q does not exist", name)}
}

// noPortal is invalid_cursor_name (34000).
func noPortal(name string) *sqlerr.Error {
	return &sqlerr.Error{SQLState: "34000", Message: fmt.Sprintf("portal %q does not exist", name)}
}

// formatsMismatch is a Bind whose result formats do not fit the columns
// (protocol_violation, 08P01).
func formatsMismatch(formats, columns int) *sqlerr.Error {
	return &sqlerr.Error{SQLState: "08P01", Message: fmt.Sprintf("bind message has %d result formats but the query has %d columns", formats, columns)}
}

// tooMany is program_limit_exceeded (54000) for the session's bound of
// maxPrepared prepared statements or portals.
func tooMany(what string) *sqlerr.Error {
	return &sqlerr.Error{SQLState: "54000", Message: fmt.Sprintf("too many %s (at most %d): close some", what, maxPrepared)}
}
