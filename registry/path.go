package registry

import (
	"fmt"
	"path"
	"strings"
)

// MaxKeyLength bounds a key's length in bytes, below every backend's limit.
const MaxKeyLength = 1024

// ValidateKey reports whether key is a usable registry key: absolute
// ("/a/b"), no trailing slash, no empty, "." or ".." segment, no NUL or
// control characters, at most MaxKeyLength bytes. "/" alone is valid (the
// root, for Children, Delete and Watch). The error wraps ErrBadKey and says
// what is wrong.
func ValidateKey(key string) error {
	switch {
	case key == "/":
		return nil
	case key == "":
		return fmt.Errorf("%w: empty key (keys are absolute paths such as /nodes/compute_nodes)", ErrBadKey)
	case len(key) > MaxKeyLength:
		return fmt.Errorf("%w: key is %d bytes long, the limit is %d", ErrBadKey, len(key), MaxKeyLength)
	case key[0] != '/':
		return fmt.Errorf("%w: %q is not absolute (keys start with /)", ErrBadKey, key)
	case strings.HasSuffix(key, "/"):
		return fmt.Errorf("%w: %q ends with /", ErrBadKey, key)
	}
	for _, seg := range strings.Split(key[1:], "/") {
		if err := validateSegment(seg); err != nil {
			return fmt.Errorf("%w: %q: %v", ErrBadKey, key, err)
		}
	}
	return nil
}

// ValidateName reports whether name can be used as one path segment (an
// instance id, database, schema, table or label name): non-empty, no "/",
// not "." or "..", no control characters, at most 255 bytes. The error wraps
// ErrBadKey.
func ValidateName(name string) error {
	if err := validateSegment(name); err != nil {
		return fmt.Errorf("%w: name %q: %v", ErrBadKey, name, err)
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("%w: name %q contains /", ErrBadKey, name)
	}
	return nil
}

func validateSegment(seg string) error {
	switch {
	case seg == "":
		return fmt.Errorf("empty path segment")
	case seg == "." || seg == "..":
		return fmt.Errorf("path segment %q is not allowed", seg)
	case len(seg) > 255:
		return fmt.Errorf("path segment is %d bytes long, the limit is 255", len(seg))
	}
	for _, c := range seg {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("control character %U in path segment", c)
		}
	}
	return nil
}

// Join joins a parent key and child names into a key, e.g.
// Join("/metadata", "db1", "schemas") = "/metadata/db1/schemas". It does not
// validate; pass the result to a Repository, which does.
func Join(parent string, names ...string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(parent, "/"))
	for _, n := range names {
		b.WriteByte('/')
		b.WriteString(n)
	}
	return b.String()
}

// Base returns the last segment of key ("/a/b" -> "b").
func Base(key string) string { return path.Base(key) }

// IsUnder reports whether key is prefix itself or lies below it, treating
// prefix as a whole path ("/a/db1" is not under "/a/db"): the rule every
// prefix operation of a backend follows.
func IsUnder(key, prefix string) bool {
	if prefix == "/" {
		return strings.HasPrefix(key, "/")
	}
	return key == prefix || strings.HasPrefix(key, prefix+"/")
}
