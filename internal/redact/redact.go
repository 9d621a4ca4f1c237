// Package redact masks secrets wherever shardkeeper shows configuration or
// registry values: the HTTP API, the admin CLI, logs and error messages.
// It is the one place that knows what a secret looks like:
//
//   - the value of a key that names a secret (see SecretName): passwords
//     (password, sslpassword, MySQL's password1..password3,
//     trustStorePassword, dataSource.password, ...), secrets, tokens,
//     credentials, passphrases, private keys, salts, ZooKeeper's digest,
//     and the keys of ShardingSphere's encrypt and mask algorithms
//     (aes-key-value, rc4-key-value, sm4-key, sm4-iv, sm3-salt);
//   - the password of a URL's user information (scheme://user:password@host,
//     up to the last @ of the authority, so a password holding @ is masked
//     whole) and of a MySQL DSN (user:password@tcp(host)/db);
//   - key=value parameters with such a key in URLs, JDBC properties and
//     DSNs: ?a=1&password=x, ;password=x, (password=x), password='x y';
//   - ShardingSphere's authority users written as user@host:password.
//
// A masked secret reads Mask. Masking is one-way and a masked value is not
// a valid secret: a writer that is handed Mask back should refuse it (see
// ContainsMask). Empty values are left empty: they hide nothing.
//
// Every function is pure and safe for concurrent use.
package redact

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Mask replaces every secret shown.
const Mask = "******"

// ContainsMask reports whether b holds Mask: a value that was printed
// masked and is being written back, which would replace the real secret
// with the mask.
func ContainsMask(b []byte) bool { return bytes.Contains(b, []byte(Mask)) }

// secretParts are the fragments that make a normalised key name secret
// wherever they appear in it.
var secretParts = []string{
	"password", "passwd", "pwd", "secret", "token", "credential", "passphrase",
	"privatekey", "salt", "apikey", "accesskey", "keyvalue", // aes-key-value, rc4-key-value
	"authorization",
}

// secretNames are normalised key names that are secret as a whole.
var secretNames = map[string]bool{
	"digest": true, // ZooKeeper digest user:password
	"sm4key": true, "sm4iv": true, "aeskey": true, "rc4key": true, "deskey": true, "iv": true,
	"encryptionkey": true, "masterkey": true, "signingkey": true, "hmackey": true,
}

// SecretName reports whether a property, field or parameter name names a
// secret. Case, '-', '_', '.' and spaces are ignored: "aes-key-value",
// "AES_KEY_VALUE" and "dataSource.password" are all secret.
func SecretName(name string) bool {
	n := normalise(name)
	if n == "" {
		return false
	}
	if secretNames[n] {
		return true
	}
	for _, p := range secretParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

func normalise(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// usersKey is the authority rule's list of users, whose string form is
// user@host:password.
const usersKey = "users"

// URL returns u with its secrets masked: the password of its user
// information and every key=value parameter whose key is secret. Anything
// else, including the host and database, is kept.
func URL(u string) string {
	return params(userinfo(u))
}

// Text masks the secrets of free text such as an error message or a log
// line: every key=value pair whose key is secret and the user information
// password of every URL or MySQL DSN in it (words are split at white
// space). "key: value" pairs are left alone (a message may name a field).
func Text(s string) string {
	var b strings.Builder
	i := 0
	for i < len(s) {
		j := i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
		b.WriteString(userinfo(s[i:j]))
		k := j
		for k < len(s) && isSpace(s[k]) {
			k++
		}
		b.WriteString(s[j:k])
		i = k
	}
	return params(b.String())
}

// minKnown is the shortest known secret Known replaces: shorter ones would
// garble the text they happen to occur in.
const minKnown = 3

// Known masks the given secrets wherever they occur in s (those of
// minKnown bytes or more, longest first), then what Text masks: for a
// message whose author may have echoed a password without its key, such as
// a database driver's error.
func Known(s string, secrets ...string) string {
	sorted := slices.Clone(secrets)
	slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	for _, k := range sorted {
		if len(k) >= minKnown {
			s = strings.ReplaceAll(s, k, Mask)
		}
	}
	return Text(s)
}

// User masks the password of an authority user written as
// user@host:password (or user:password).
func User(s string) string {
	from := strings.IndexByte(s, '@')
	if from < 0 {
		from = 0
	}
	c := strings.IndexByte(s[from:], ':')
	if c < 0 || from+c+1 == len(s) {
		return s
	}
	return s[:from+c+1] + Mask
}

// userinfo masks the password of scheme://user:password@host or of a
// MySQL DSN user:password@tcp(host)/db. The user information ends at the
// last @ before the path or the last @ before the query, whichever comes
// later, so a password holding @, /, ? or # (one of the last two at a
// time) is masked whole.
func userinfo(s string) string {
	start, scheme := 0, false
	if i := strings.Index(s, "://"); i >= 0 {
		start, scheme = i+3, true
	}
	rest := s[start:]
	beforePath, beforeQuery := rest, rest
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		beforePath = rest[:j]
	}
	if j := strings.IndexAny(rest, "?#"); j >= 0 {
		beforeQuery = rest[:j]
	}
	at := max(strings.LastIndexByte(beforePath, '@'), strings.LastIndexByte(beforeQuery, '@'))
	if at < 0 {
		return s
	}
	at += start
	colon := strings.IndexByte(s[start:at], ':')
	if colon < 0 {
		return s
	}
	colon += start
	if !scheme {
		user := s[:colon]
		rest := s[at+1:]
		dsn := strings.HasPrefix(rest, "tcp(") || strings.HasPrefix(rest, "unix(") || strings.HasPrefix(rest, "udp(") ||
			strings.HasPrefix(rest, "(") || strings.HasPrefix(rest, "/")
		if !dsn || strings.ContainsAny(user, "/=") {
			return s
		}
	}
	if colon+1 == at {
		return s // user:@host: no password
	}
	return s[:colon+1] + Mask + s[at:]
}

// nextParam matches what follows a comma that ends a value: another
// key=value pair.
var nextParam = regexp.MustCompile(`^,\s*[A-Za-z0-9_.\-]+=`)

// params masks the values of key=value pairs whose key is secret.
func params(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			continue
		}
		k := i
		for k > 0 && isNameByte(s[k-1]) {
			k--
		}
		if k == i || !SecretName(s[k:i]) {
			continue
		}
		v := i + 1
		end := valueEnd(s, v)
		if end == v {
			continue
		}
		b.WriteString(s[last:v])
		b.WriteString(Mask)
		last = end
		i = end - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// valueEnd returns where the parameter value starting at v ends: its
// closing quote, or the first &, ;, ), white space, or a comma that starts
// another key=value pair.
func valueEnd(s string, v int) int {
	if v < len(s) && (s[v] == '\'' || s[v] == '"') {
		if c := strings.IndexByte(s[v+1:], s[v]); c >= 0 {
			return v + 1 + c + 1
		}
		return len(s)
	}
	for j := v; j < len(s); j++ {
		switch c := s[j]; {
		case c == '&' || c == ';' || c == ')' || isSpace(c):
			return j
		case c == ',' && nextParam.MatchString(s[j:]):
			return j
		}
	}
	return len(s)
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Value returns a copy of v, a value decoded from YAML or JSON (maps,
// lists, scalars), with its secrets masked: the scalar values of secret
// keys (a map or list under a secret key is walked: an encrypt rule's
// column may be named password), URLs and parameters inside strings, and
// the passwords of authority users. v itself is not changed.
func Value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = entry(k, e)
		}
		return m
	case map[any]any:
		m := make(map[any]any, len(x))
		for k, e := range x {
			m[k] = entry(fmt.Sprint(k), e)
		}
		return m
	case map[string]string:
		m := make(map[string]string, len(x))
		for k, e := range x {
			m[k] = entry(k, e).(string)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = Value(e)
		}
		return l
	case []string:
		l := make([]string, len(x))
		for i, e := range x {
			l[i] = URL(e)
		}
		return l
	case string:
		return URL(x)
	}
	return v
}

// Map returns a copy of m with its secrets masked, as Value does.
func Map(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return Value(m).(map[string]any)
}

func entry(key string, e any) any {
	if SecretName(key) && scalar(e) {
		if empty(e) {
			return e
		}
		return Mask
	}
	if normalise(key) == usersKey {
		if l, ok := e.([]any); ok {
			out := make([]any, len(l))
			for i, u := range l {
				if s, ok := u.(string); ok {
					out[i] = User(s)
				} else {
					out[i] = Value(u)
				}
			}
			return out
		}
	}
	return Value(e)
}

// scalar reports whether v is neither a map nor a list: under a secret key
// a map or a list is walked, not masked whole (the encrypt rule's columns
// are often named password).
func scalar(v any) bool {
	switch v.(type) {
	case map[string]any, map[any]any, map[string]string, []any, []string:
		return false
	}
	return true
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	}
	return false
}

// YAML returns doc, a YAML (or JSON) document such as a registry value,
// with its secrets masked as Value masks them. A document without secrets
// is returned as it is, byte for byte; a masked one is encoded again (the
// same content, comments kept, indentation normalised). Text that is not
// YAML is masked line by line: "key: value" and key=value pairs with a
// secret key, and URLs.
func YAML(doc []byte) []byte {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return lines(doc)
		}
		docs = append(docs, &n)
	}
	changed := false
	for _, n := range docs {
		changed = node(n) || changed
	}
	if !changed {
		return doc
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for _, n := range docs {
		if err := enc.Encode(n); err != nil {
			return lines(doc)
		}
	}
	if err := enc.Close(); err != nil {
		return lines(doc)
	}
	return out.Bytes()
}

// node masks the secrets under n in place and reports whether it changed
// anything.
func node(n *yaml.Node) bool {
	changed := false
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			changed = node(c) || changed
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case SecretName(k.Value) && (v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode):
				if v.Kind == yaml.ScalarNode && (v.Value == "" || v.Tag == "!!null") {
					continue
				}
				*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: Mask, Line: v.Line, Column: v.Column,
					HeadComment: v.HeadComment, LineComment: v.LineComment, FootComment: v.FootComment}
				changed = true
			case normalise(k.Value) == usersKey && v.Kind == yaml.SequenceNode:
				for _, u := range v.Content {
					if u.Kind == yaml.ScalarNode {
						if m := User(u.Value); m != u.Value {
							u.Value, u.Style = m, 0
							changed = true
						}
						continue
					}
					changed = node(u) || changed
				}
			default:
				changed = node(v) || changed
			}
		}
	case yaml.ScalarNode:
		if m := URL(n.Value); m != n.Value {
			n.Value = m
			changed = true
		}
	}
	return changed
}

// secretLine is a "key: value" line (a YAML field, possibly a list item)
// whose key may be secret.
var secretLine = regexp.MustCompile(`^(\s*(?:-\s+)?["']?([A-Za-z0-9_.\-]+)["']?\s*:\s+)(\S.*)$`)

// lines masks text that is not YAML line by line.
func lines(doc []byte) []byte {
	ls := strings.Split(string(doc), "\n")
	for i, l := range ls {
		if m := secretLine.FindStringSubmatch(l); m != nil && SecretName(m[2]) {
			ls[i] = m[1] + Mask
			continue
		}
		ls[i] = Text(l)
	}
	return []byte(strings.Join(ls, "\n"))
}
