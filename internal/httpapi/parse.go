package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shardkeeper/shardkeeper/internal/clusterlock"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// MaxKeysPerRequest is the largest count GET /api/v1/keys accepts.
const MaxKeysPerRequest = 10000

// maxBody bounds request bodies.
const maxBody = 64 << 10

// parseCount reads count from a raw query string ("count=N"): 1 when
// absent, an error unless 1 <= N <= MaxKeysPerRequest. Other parameters
// are ignored. It does not allocate on the common paths.
func parseCount(rawQuery string) (int, *sqlerr.Error) {
	q := rawQuery
	for q != "" {
		var part string
		part, q, _ = strings.Cut(q, "&")
		name, value, _ := strings.Cut(part, "=")
		if name != "count" {
			continue
		}
		n, ok := atoiSmall(value)
		if !ok {
			if v, err := url.QueryUnescape(value); err == nil {
				if n, ok = atoiSmall(v); ok {
					return checkCount(n, v)
				}
				value = v
			}
			return 0, badRequest("count %s is not a whole number (want 1 to %d)", quote(value), MaxKeysPerRequest)
		}
		return checkCount(n, value)
	}
	return 1, nil
}

func checkCount(n int, value string) (int, *sqlerr.Error) {
	if n < 1 || n > MaxKeysPerRequest {
		return 0, badRequest("count %s is out of range: want 1 to %d", quote(value), MaxKeysPerRequest)
	}
	return n, nil
}

// atoiSmall parses up to 9 decimal digits (no sign).
func atoiSmall(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// parseKey reads a key given as a decimal string (what GET /api/v1/keys
// returns).
func parseKey(s string) (int64, *sqlerr.Error) {
	k, err := strconv.ParseInt(s, 10, 64)
	if err != nil || k < 0 || (len(s) > 1 && s[0] == '0') || s[0] == '+' {
		return 0, badRequest("key %s is not a key: want a non-negative decimal 64-bit integer such as 1234567890123456789", quote(s))
	}
	return k, nil
}

// readBody reads a JSON request body of at most maxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *sqlerr.Error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return nil, badRequest("reading the request body: %v (at most %d bytes)", err, maxBody)
	}
	return b, nil
}

// decodeObject decodes a JSON object body into v, with a message naming
// what was expected.
func decodeObject(body []byte, v any, want string) *sqlerr.Error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("empty request body: want %s", want)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return badRequest("request body is not %s: %v", want, err)
	}
	if dec.More() {
		return badRequest("request body has data after the JSON object: want only %s", want)
	}
	return nil
}

// parseStateBody reads {"state":"ENABLE"|"DISABLE"} (case-insensitive).
func parseStateBody(body []byte) (string, *sqlerr.Error) {
	const want = `{"state":"ENABLE"} or {"state":"DISABLE"}`
	var v struct {
		State *string `json:"state"`
	}
	if err := decodeObject(body, &v, want); err != nil {
		return "", err
	}
	if v.State == nil {
		return "", badRequest("missing field state: want %s", want)
	}
	switch s := strings.ToUpper(strings.TrimSpace(*v.State)); s {
	case "ENABLE", "DISABLE":
		return s, nil
	}
	return "", badRequest("state %s: want ENABLE or DISABLE", quote(*v.State))
}

// parseValueBody reads {"value": V}. V may be a string, a number or a
// boolean; it is returned as text.
func parseValueBody(body []byte) (string, *sqlerr.Error) {
	const want = `{"value":"..."}`
	var v struct {
		Value json.RawMessage `json:"value"`
	}
	if err := decodeObject(body, &v, want); err != nil {
		return "", err
	}
	if v.Value == nil || string(v.Value) == "null" {
		return "", badRequest("missing field value: want %s", want)
	}
	var s string
	if err := json.Unmarshal(v.Value, &s); err == nil {
		return s, nil
	}
	switch v.Value[0] {
	case '{', '[':
		return "", badRequest("value must be a string, a number or a boolean, not %s", v.Value)
	}
	return string(v.Value), nil
}

// lockRequest is the body of PUT /api/v1/cluster/lock (of
// /api/v1/cluster/unlock: the timeout only).
type lockRequest struct {
	Strategy string        // WRITE or READ_WRITE
	Timeout  time.Duration // the wait for the cluster lock
}

// parseLockBody reads {"strategy":"WRITE"|"READ_WRITE","timeoutMillis":N}.
func parseLockBody(body []byte) (lockRequest, *sqlerr.Error) {
	const want = `{"strategy":"WRITE"} or {"strategy":"READ_WRITE"}`
	var v struct {
		Strategy      *string `json:"strategy"`
		TimeoutMillis *int64  `json:"timeoutMillis"`
	}
	if err := decodeObject(body, &v, want); err != nil {
		return lockRequest{}, err
	}
	if v.Strategy == nil {
		return lockRequest{}, badRequest("missing field strategy: want %s", want)
	}
	req := lockRequest{Strategy: strings.ToUpper(strings.TrimSpace(*v.Strategy)), Timeout: clusterlock.DefaultTimeout}
	if _, err := clusterlock.StateFor(req.Strategy); err != nil {
		return lockRequest{}, badRequest("strategy %s: want WRITE or READ_WRITE", quote(*v.Strategy))
	}
	if t, err := parseTimeout(v.TimeoutMillis); err != nil {
		return lockRequest{}, err
	} else if t > 0 {
		req.Timeout = t
	}
	return req, nil
}

// parseUnlockBody reads an optional {"timeoutMillis":N}.
func parseUnlockBody(body []byte) (time.Duration, *sqlerr.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return clusterlock.DefaultTimeout, nil
	}
	var v struct {
		TimeoutMillis *int64 `json:"timeoutMillis"`
	}
	if err := decodeObject(body, &v, `{} or {"timeoutMillis":3000}`); err != nil {
		return 0, err
	}
	t, err := parseTimeout(v.TimeoutMillis)
	if err != nil {
		return 0, err
	}
	if t == 0 {
		t = clusterlock.DefaultTimeout
	}
	return t, nil
}

func parseTimeout(ms *int64) (time.Duration, *sqlerr.Error) {
	if ms == nil {
		return 0, nil
	}
	if *ms < 1 || *ms > 600000 {
		return 0, badRequest("timeoutMillis %d: want 1 to 600000", *ms)
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

// quote shows user input in a message: quoted, invalid UTF-8 escaped,
// long input cut.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	if !utf8.ValidString(s) {
		return fmt.Sprintf("%+q", s)
	}
	return strconv.Quote(s)
}
