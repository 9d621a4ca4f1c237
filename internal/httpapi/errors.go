package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/shardkeeper/shardkeeper/internal/clusterlock"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// ShardingSphere vendor codes the API returns.
const (
	CodeNone                 = 0
	CodeUnsupportedOperation = 30001 // "Unsupported SQL operation: %s."
)

// Error is an API error: the HTTP status, ShardingSphere's vendor code (0
// when there is none) and the message. Its JSON form is
// {"error": Message, "code": Code}.
type Error struct {
	Status  int
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(status, code int, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, CodeNone, format, args...)
}

// unsupportedOperation is ShardingSphere's UnsupportedSQLOperationException.
func unsupportedOperation(status int, reason string) *Error {
	return errorf(status, CodeUnsupportedOperation, "Unsupported SQL operation: %s.", reason)
}

// sqlStatus is the HTTP status of a refusal with ShardingSphere's code:
// 404 for a variable that does not exist, 409 for LOCK CLUSTER on a
// locked cluster and UNLOCK CLUSTER on an unlocked one, 400 for every
// other refused request (writeError answers a retryable conflict, SQL
// state 40001, with 409 too).
func sqlStatus(code uint16) int {
	switch code {
	case distvar.CodeUnsupportedVariable:
		return http.StatusNotFound
	case clusterlock.ErrLocked.Code, clusterlock.ErrNotLocked.Code:
		return http.StatusConflict
	}
	return http.StatusBadRequest
}

var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// writeError writes err as the API's JSON error. A refusal with
// ShardingSphere's code (an *sqlerr.Error from distvar, clusterlock or
// dbconfig) keeps its code and message, with the status sqlStatus gives
// it. Other errors that are not an *Error become 500 with their text, its
// secrets masked (redact.Text).
func (s *Server) writeError(w http.ResponseWriter, err error) {
	e, ok := err.(*Error)
	var refused *sqlerr.Error
	switch {
	case ok:
	case errors.As(err, &refused):
		e = &Error{Status: sqlStatus(refused.Code), Code: int(refused.Code), Message: refused.Message}
		if refused.SQLState == "40001" { // a change that lost to concurrent ones: send it again
			e.Status = http.StatusConflict
		}
	default:
		e = &Error{Status: http.StatusInternalServerError, Message: redact.Text(err.Error())}
		s.log.Warn("http: internal error", "err", err)
	}
	s.metrics.httpError(e.Status)
	b := make([]byte, 0, 64+len(e.Message))
	b = append(b, `{"error":`...)
	b = appendJSONString(b, e.Message)
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(e.Code), 10)
	b = append(b, "}\n"...)
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Cache-Control"] = noStore
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}

// writeJSON writes v as JSON with status 200.
func (s *Server) writeJSON(w http.ResponseWriter, v any) { s.writeJSONStatus(w, http.StatusOK, v) }

// writeJSONStatus writes v as JSON with status.
func (s *Server) writeJSONStatus(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.writeError(w, err)
		return
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Cache-Control"] = noStore
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
