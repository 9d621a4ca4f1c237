package main

import (
	"bytes"
	"regexp"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
)

// passwordField matches a YAML password field of a data source unit.
var passwordField = regexp.MustCompile(`(?i)^(\s*(?:password|dataSource\.password)\s*:\s*)\S.*$`)

// redact hides secrets in a registry value before the CLI prints it: the
// passwords of data source units, as fields and inside their URLs. Other
// values are returned as they are. --show-secrets skips it.
func redact(key string, value []byte) []byte {
	k, ok := paths.ParseKey(key)
	if !ok || k.Kind != paths.KindUnit {
		return value
	}
	lines := bytes.Split(value, []byte("\n"))
	for i, l := range lines {
		l = passwordField.ReplaceAll(l, []byte("${1}******"))
		lines[i] = []byte(config.RedactURL(string(l)))
	}
	return bytes.Join(lines, []byte("\n"))
}
