package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/clusterlock"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

func TestParseCount(t *testing.T) {
	for _, c := range []struct {
		query string
		want  int
		err   string
	}{
		{"", 1, ""},
		{"count=1", 1, ""},
		{"count=10000", 10000, ""},
		{"x=1&count=42&y", 42, ""},
		{"count=%34%32", 42, ""},
		{"count=0", 0, "out of range"},
		{"count=10001", 0, "out of range"},
		{"count=999999999", 0, "out of range"},
		{"count=9999999999", 0, "not a whole number"},
		{"count=-1", 0, "not a whole number"},
		{"count=+1", 0, "not a whole number"},
		{"count=1.5", 0, "not a whole number"},
		{"count=", 0, "not a whole number"},
		{"count", 0, "not a whole number"},
		{"count=%zz", 0, "not a whole number"},
	} {
		got, err := parseCount(c.query)
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("parseCount(%q) = %d, %v; want %d", c.query, got, err, c.want)
			}
			continue
		}
		if err == nil || err.Kind.HTTPStatus() != 400 || !strings.Contains(err.Message, c.err) {
			t.Errorf("parseCount(%q) = %d, %v; want an error with %q", c.query, got, err, c.err)
		}
	}
}

func TestParseKey(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1176468011716808704", 1176468011716808704, true}, {"9223372036854775807", 1<<63 - 1, true},
		{"9223372036854775808", 0, false}, {"-1", 0, false}, {"+1", 0, false}, {"007", 0, false}, {"1e9", 0, false}, {"abc", 0, false}, {" 1", 0, false},
	} {
		got, err := parseKey(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseKey(%q) = %d, %v", c.in, got, err)
		}
	}
}

func TestParseBodies(t *testing.T) {
	for _, c := range []struct {
		name  string
		parse func([]byte) (string, *sqlerr.Error)
		body  string
		want  string
		err   string
	}{
		{"state", parseStateBody, `{"state":"ENABLE"}`, "ENABLE", ""},
		{"state", parseStateBody, `{"state":" disable "}`, "DISABLE", ""},
		{"state", parseStateBody, `{"state":"DISABLE","extra":1}`, "DISABLE", ""},
		{"state", parseStateBody, `{"state":"OFF"}`, "", "ENABLE or DISABLE"},
		{"state", parseStateBody, `{}`, "", "missing field state"},
		{"state", parseStateBody, ``, "", "empty request body"},
		{"state", parseStateBody, `{"state":1}`, "", "not"},
		{"state", parseStateBody, `{"state":"ENABLE"} {}`, "", "after the JSON object"},
		{"state", parseStateBody, `[1]`, "", "not"},
		{"value", parseValueBody, `{"value":"true"}`, "true", ""},
		{"value", parseValueBody, `{"value":16}`, "16", ""},
		{"value", parseValueBody, `{"value":false}`, "false", ""},
		{"value", parseValueBody, `{"value":""}`, "", ""},
		{"value", parseValueBody, `{"value":null}`, "", "missing field value"},
		{"value", parseValueBody, `{"value":[1]}`, "", "a string, a number or a boolean"},
		{"value", parseValueBody, `{"value":{}}`, "", "a string, a number or a boolean"},
		{"value", parseValueBody, `{"value":"x"`, "", "not"},
	} {
		got, err := c.parse([]byte(c.body))
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("%s %s = %q, %v; want %q", c.name, c.body, got, err, c.want)
			}
			continue
		}
		if err == nil || err.Kind.HTTPStatus() != 400 || !strings.Contains(err.Message, c.err) {
			t.Errorf("%s %s = %q, %v; want an error with %q", c.name, c.body, got, err, c.err)
		}
	}
}

func TestParseLockBodies(t *testing.T) {
	req, err := parseLockBody([]byte(`{"strategy":"read_write","timeoutMillis":500}`))
	if err != nil || req.Strategy != "READ_WRITE" || req.Timeout != 500*time.Millisecond {
		t.Fatalf("lock = %+v, %v", req, err)
	}
	req, err = parseLockBody([]byte(`{"strategy":"WRITE"}`))
	if err != nil || req.Timeout != clusterlock.DefaultTimeout {
		t.Fatalf("lock default timeout = %+v, %v", req, err)
	}
	for _, bad := range []string{``, `{}`, `{"strategy":"READ"}`, `{"strategy":"WRITE","timeoutMillis":0}`, `{"strategy":"WRITE","timeoutMillis":"5"}`} {
		if _, err := parseLockBody([]byte(bad)); err == nil || err.Kind.HTTPStatus() != 400 {
			t.Errorf("lock %s: %v", bad, err)
		}
	}
	if d, err := parseUnlockBody(nil); err != nil || d != clusterlock.DefaultTimeout {
		t.Fatalf("unlock empty = %v, %v", d, err)
	}
	if d, err := parseUnlockBody([]byte(`{"timeoutMillis":100}`)); err != nil || d != 100*time.Millisecond {
		t.Fatalf("unlock = %v, %v", d, err)
	}
	if _, err := parseUnlockBody([]byte(`{"timeoutMillis":-1}`)); err == nil {
		t.Fatal("unlock with a negative timeout accepted")
	}
}

// FuzzParsers: no parser panics, and every error is a 400 with a message.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{"count=5", "count=%31", `{"state":"ENABLE"}`, `{"value":1}`, `{"strategy":"WRITE","timeoutMillis":9}`, "", "\xff", "count=1&count=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseCount(s); err == nil && (n < 1 || n > MaxKeysPerRequest) {
			t.Fatalf("parseCount(%q) = %d", s, n)
		} else if err != nil && (err.Kind.HTTPStatus() != 400 || err.Message == "") {
			t.Fatalf("parseCount(%q) error %+v", s, err)
		}
		if k, err := parseKey(s); err == nil && k < 0 {
			t.Fatalf("parseKey(%q) = %d", s, k)
		}
		b := []byte(s)
		check := func(what string, err *sqlerr.Error) {
			if err != nil && (err.Kind.HTTPStatus() != 400 || err.Message == "") {
				t.Fatalf("%s(%q) error %+v", what, s, err)
			}
		}
		st, err := parseStateBody(b)
		check("parseStateBody", err)
		if err == nil && st != "ENABLE" && st != "DISABLE" {
			t.Fatalf("parseStateBody(%q) = %q", s, st)
		}
		_, err = parseValueBody(b)
		check("parseValueBody", err)
		lr, err := parseLockBody(b)
		check("parseLockBody", err)
		if err == nil && (lr.Timeout <= 0 || (lr.Strategy != "WRITE" && lr.Strategy != "READ_WRITE")) {
			t.Fatalf("parseLockBody(%q) = %+v", s, lr)
		}
		_, err = parseUnlockBody(b)
		check("parseUnlockBody", err)
	})
}
