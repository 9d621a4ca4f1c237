package rule

import (
	"path"
	"strings"
)

// MatchLike reports whether s matches the SQL LIKE pattern (% any run, _
// one character, \ escapes), in any case, as upstream's SHOW ... LIKE
// matches.
func MatchLike(pattern, s string) bool {
	var glob strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '%':
			glob.WriteByte('*')
		case '_':
			glob.WriteByte('?')
		case '\\':
			if i+1 < len(pattern) {
				i++
				glob.WriteString("\\" + string(pattern[i]))
			}
		case '*', '?', '[', ']':
			glob.WriteString("\\" + string(c))
		default:
			glob.WriteByte(c)
		}
	}
	ok, err := path.Match(strings.ToLower(glob.String()), strings.ToLower(s))
	return err == nil && ok
}
