package mysqlfront

import (
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/shardkeeper/shardkeeper/internal/console"
)

// warningCode is the code SHOW WARNINGS shows for a console warning
// (ER_UNKNOWN_ERROR: console warnings have no MySQL code of their own).
const warningCode = mysql.ER_UNKNOWN_ERROR

// internalErrorCode is ShardingSphere's code for an unexpected failure.
const internalErrorCode = 30000

// toMyError is err as the client sees it: a *sqlerr.Error with its code
// and state, anything else as ShardingSphere's 30000 / HY000 with its text.
func toMyError(err error) *mysql.MyError {
	var ce *sqlerr.Error
	if errors.As(err, &ce) {
		state := ce.SQLState
		if len(state) != 5 {
			state = mysql.DEFAULT_MYSQL_STATE
		}
		return &mysql.MyError{Code: ce.Code, State: state, Message: ce.Message}
	}
	return &mysql.MyError{Code: internalErrorCode, State: mysql.DEFAULT_MYSQL_STATE, Message: "Unknown exception: " + err.Error()}
}

// toResult is r as a MySQL result: a text result set when r has columns,
// else an OK with r.Affected.
func toResult(r *console.Result) (*mysql.Result, error) {
	if len(r.Columns) == 0 {
		return &mysql.Result{AffectedRows: r.Affected}, nil
	}
	rs := mysql.NewResultset(len(r.Columns))
	for i, c := range r.Columns {
		f := &mysql.Field{Name: []byte(c.Name), Charset: 33, Type: mysql.MYSQL_TYPE_VAR_STRING}
		if c.Type == console.Int64 {
			f.Charset, f.Type, f.Flag = 63, mysql.MYSQL_TYPE_LONGLONG, mysql.BINARY_FLAG
		}
		rs.Fields[i] = f
	}
	// Every row's text encoding goes into one buffer, sized first.
	size := 0
	for i, row := range r.Rows {
		if len(row) != len(r.Columns) {
			return nil, toMyError(fmt.Errorf("result row %d has %d values for %d columns", i, len(row), len(r.Columns)))
		}
		for _, v := range row {
			size++
			if v != nil {
				size += 8 + len(*v)
			}
		}
	}
	buf := make([]byte, 0, size)
	rs.RowDatas = make([]mysql.RowData, 0, len(r.Rows))
	for _, row := range r.Rows {
		start := len(buf)
		for _, v := range row {
			if v == nil {
				buf = append(buf, 0xfb) // NULL
				continue
			}
			buf = appendLengthEncodedString(buf, *v)
		}
		rs.RowDatas = append(rs.RowDatas, buf[start:len(buf):len(buf)])
	}
	return mysql.NewResult(rs), nil
}

// sharedResultset is the encoding of a console.Result whose rows are
// shared (console.Result.Shared), kept with those rows: it is used while
// a statement returns the same Rows slice (the same backing array and
// length) and Columns. Its fields' encodings are made once (Field.Data),
// so that writing it allocates nothing for them; it is only read after
// it is built, by any number of sessions at once.
type sharedResultset struct {
	rows [][]*string
	cols []console.Column
	rs   *mysql.Resultset
}

// sameSlice reports whether a and b are the same slice: the same first
// element and length (two empty slices are never the same).
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// resultOf is r as a MySQL result (toResult), from the last shared
// encoding when r's rows are shared and are the ones it was made of.
func (s *Server) resultOf(r *console.Result) (*mysql.Result, error) {
	if !r.Shared || len(r.Columns) == 0 || len(r.Rows) == 0 {
		return toResult(r)
	}
	if c := s.shared.Load(); c != nil && sameSlice(c.rows, r.Rows) && sameSlice(c.cols, r.Columns) {
		return mysql.NewResult(c.rs), nil
	}
	res, err := toResult(r)
	if err != nil {
		return nil, err
	}
	for _, f := range res.Fields {
		f.Data = f.Dump()
	}
	s.shared.Store(&sharedResultset{rows: r.Rows, cols: r.Columns, rs: res.Resultset})
	return mysql.NewResult(res.Resultset), nil
}

// appendLengthEncodedString appends s as a MySQL length-encoded string.
func appendLengthEncodedString(b []byte, s string) []byte {
	switch n := uint64(len(s)); {
	case n < 251:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 0xfc, byte(n), byte(n>>8))
	case n < 1<<24:
		b = append(b, 0xfd, byte(n), byte(n>>8), byte(n>>16))
	default:
		b = append(b, 0xfe, byte(n), byte(n>>8), byte(n>>16), byte(n>>24), byte(n>>32), byte(n>>40), byte(n>>48), byte(n>>56))
	}
	return append(b, s...)
}

// warningsResultset is SHOW WARNINGS: Level, Code, Message.
func warningsResultset(ws []warning) *mysql.Resultset {
	r := &console.Result{Columns: []console.Column{{Name: "Level"}, {Name: "Code", Type: console.Int64}, {Name: "Message"}}}
	for _, w := range ws {
		level, code, msg := w.level, strconv.Itoa(int(w.code)), w.message
		r.Rows = append(r.Rows, []*string{&level, &code, &msg})
	}
	res, _ := toResult(r) // rows match the columns
	return res.Resultset
}
