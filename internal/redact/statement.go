package redact

import "strings"

// Statement masks the secrets of a SQL or DistSQL statement's text, for
// SHOW PROCESSLIST, the registry's process-list answers and logs:
//
//   - the string literal or bare word after a secret name and '='
//     (PASSWORD='x', PASSWORD = "x", "password"="x" inside PROPERTIES(...),
//     password=x);
//   - every string literal of IMPORT METADATA (the exported cluster, with
//     every password in it);
//   - URL passwords and secret parameters inside any other literal
//     (URL='jdbc:mysql://u:p@h/db?password=x').
//
// Literals are quoted with ' or " (” and "" and backslash escapes are
// honoured; a backslash is taken as an escape even where the dialect
// does not, so the masking errs towards hiding more). An unterminated
// literal after a secret name is masked to the end of the text. The
// result has the statement's shape with Mask in place of each secret.
func Statement(sql string) string {
	var b strings.Builder
	b.Grow(len(sql))
	importMetadata := isImportMetadata(sql)
	secretNext := false // the last token was '=' after a secret name
	lastName := ""      // the last word or quoted name seen, before '='
	i := 0
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == '\'' || c == '"':
			end := literalEnd(sql, i)
			closed := end-i >= 2 && sql[end-1] == c
			body, quote := sql[i+1:end], ""
			if closed {
				body, quote = sql[i+1:end-1], string(c)
			}
			switch {
			case secretNext || importMetadata:
				b.WriteString(string(c) + Mask + quote)
			default:
				b.WriteString(string(c) + URL(body) + quote)
			}
			lastName = body
			secretNext = false
			i = end
		case c == '=':
			b.WriteByte(c)
			secretNext = lastName != "" && SecretName(lastName)
			i++
		case isSpace(c):
			b.WriteByte(c)
			i++
		case isNameByte(c):
			j := i
			for j < len(sql) && isNameByte(sql[j]) {
				j++
			}
			if secretNext {
				b.WriteString(Mask)
			} else {
				b.WriteString(sql[i:j])
			}
			lastName = sql[i:j]
			secretNext = false
			i = j
		default:
			b.WriteByte(c)
			lastName, secretNext = "", false
			i++
		}
	}
	return b.String()
}

// literalEnd returns the index just past the literal that opens at i
// (sql[i] is its quote), or len(sql) when it is not closed.
func literalEnd(sql string, i int) int {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			j++
		case q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

// isImportMetadata reports whether sql is an IMPORT METADATA statement
// (leading white space and case ignored).
func isImportMetadata(sql string) bool {
	f := strings.Fields(sql)
	return len(f) >= 2 && strings.EqualFold(f[0], "IMPORT") && strings.EqualFold(f[1], "METADATA")
}
