package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// refuse is a refusal of the API itself, without a ShardingSphere code:
// its kind gives the status (sqlerr.Kind.HTTPStatus).
func refuse(kind sqlerr.Kind, format string, args ...any) *sqlerr.Error {
	return &sqlerr.Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *sqlerr.Error {
	return refuse(sqlerr.Invalid, format, args...)
}

var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// writeError writes err as the API's JSON error. A refusal
// (sqlerr.Refusal: an *sqlerr.Error, the API's own or one of distvar,
// clusterlock, dbconfig, computenode, metadata, or a write beyond the
// registry's request limit) keeps its code and message, with the status
// of its kind (sqlerr.Kind.HTTPStatus). Other errors become 500 with their
// text, its secrets masked (redact.Text).
func (s *Server) writeError(w http.ResponseWriter, err error) {
	refused, ok := sqlerr.Refusal(err)
	if !ok {
		s.log.Warn("http: internal error", "err", err)
		s.writeStatus(w, http.StatusInternalServerError, 0, redact.Text(err.Error()))
		return
	}
	s.writeStatus(w, refused.Kind.HTTPStatus(), refused.Code, refused.Message)
}

// writeStatus writes the API's JSON error {"error": message, "code": code}
// with status. Only writeError and the answers of HTTP itself (405, 421)
// call it.
func (s *Server) writeStatus(w http.ResponseWriter, status int, code uint16, message string) {
	s.metrics.httpError(status)
	b := make([]byte, 0, 64+len(message))
	b = append(b, `{"error":`...)
	b = appendJSONString(b, message)
	b = append(b, `,"code":`...)
	b = strconv.AppendUint(b, uint64(code), 10)
	b = append(b, "}\n"...)
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Cache-Control"] = noStore
	w.WriteHeader(status)
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
