package pgfront

import "strings"

// databaseTag is PostgreSQL's command tag for CREATE DATABASE and DROP
// DATABASE (and their SCHEMA spellings): the two words, without the row
// count a DistSQL statement's tag carries. word is q's first word, upper
// case.
func databaseTag(word, q string) (string, bool) {
	if word != "CREATE" && word != "DROP" {
		return "", false
	}
	rest := strings.TrimSpace(stripComments(q))[len(word):]
	second := strings.ToUpper(firstWord(rest))
	if second != "DATABASE" && second != "SCHEMA" {
		return "", false
	}
	return word + " " + second, true
}
