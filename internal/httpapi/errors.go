package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/shardkeeper/shardkeeper/internal/redact"
)

// ShardingSphere vendor codes the API returns.
const (
	CodeNone                 = 0
	CodeUnsupportedVariable  = 12010 // "Can not support variable '%s'."
	CodeInvalidVariableValue = 12011 // "Invalid variable value '%s'."
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

// unsupportedVariable is ShardingSphere's UnsupportedVariableException.
func unsupportedVariable(name string) *Error {
	return errorf(http.StatusNotFound, CodeUnsupportedVariable, "Can not support variable '%s'.", name)
}

// invalidVariableValue is ShardingSphere's InvalidVariableValueException.
func invalidVariableValue(value string) *Error {
	return errorf(http.StatusBadRequest, CodeInvalidVariableValue, "Invalid variable value '%s'.", value)
}

// unsupportedOperation is ShardingSphere's UnsupportedSQLOperationException.
func unsupportedOperation(status int, reason string) *Error {
	return errorf(status, CodeUnsupportedOperation, "Unsupported SQL operation: %s.", reason)
}

var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// writeError writes err as the API's JSON error. Errors that are not an
// *Error become 500 with their text, its secrets masked (redact.Text).
func (s *Server) writeError(w http.ResponseWriter, err error) {
	e, ok := err.(*Error)
	if !ok {
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
