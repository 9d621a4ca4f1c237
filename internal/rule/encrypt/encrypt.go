// Package encrypt is the encrypt rule family: CREATE, ALTER, DROP and
// SHOW ENCRYPT RULE(S) as upstream 5.5's EncryptDistSQLStatement.g4 reads
// them and its executors check and write them, and the rule's checks,
// registry fields and COUNT. The rule's content is upstream's YAML:
// tables: {t: {columns: {c: {cipher: {name, encryptorName},
// assistedQuery: {...}, likeQuery: {...}}}}}, encryptors: {name: {type,
// props}}.
package encrypt

import (
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// Family is the encrypt rule family.
var Family rule.Family = rule.ColumnRule[Column]{
	RuleType:   "encrypt",
	Keyword:    "ENCRYPT",
	Label:      "Encrypt",
	Algorithms: "encryptors",
	Column:     column,
	Value:      value,
	Uses:       uses,
	NeedsUnits: true,
	Props:      Algorithms,
	Fields: []rule.ColumnAlgorithm{{Kind: "Standard encrypt", Field: "cipher.encryptorName"},
		{Kind: "Assist query encrypt", Field: "assistedQuery.encryptorName"}, {Kind: "Like query encrypt", Field: "likeQuery.encryptorName"}},
	ShowColumns: []string{"table", "logic_column", "cipher_column", "assisted_query_column", "like_query_column",
		"encryptor_type", "encryptor_props", "assisted_query_type", "assisted_query_props", "like_query_type", "like_query_props"},
	ShowRow:    showRow,
	ColumnName: "name",
}

// Item is a column an encrypt column derives (cipher, assisted query,
// like query): its name and the algorithm that computes it. Algorithm is
// nil for a query column given without its algorithm.
type Item struct {
	Name      string
	Algorithm *distsql.Algorithm
}

// Column is (NAME=c, CIPHER=cc [, ASSISTED_QUERY=aq] [, LIKE_QUERY=lq],
// ENCRYPT_ALGORITHM(TYPE(...)) [, ASSISTED_QUERY_ALGORITHM(TYPE(...))] [,
// LIKE_QUERY_ALGORITHM(TYPE(...))]) of an encrypt rule, without its name.
// AssistedQuery and LikeQuery are nil when not given; Cipher's Algorithm
// is never nil.
type Column struct {
	Cipher                   Item
	AssistedQuery, LikeQuery *Item
}

// column reads the inside of an encrypt column's parentheses: NAME=c
// first, then its other settings in any order, each at most once.
func column(p *distsql.Parser) (string, Column) {
	p.Expect("NAME")
	p.ExpectSymbol("=")
	name := p.Identifier("column name")
	var c Column
	var assisted, like *distsql.Algorithm
	seen := map[string]bool{}
	item := func(what string) *Item {
		p.ExpectSymbol("=")
		return &Item{Name: p.Identifier(what)}
	}
	wrapped := func() *distsql.Algorithm {
		p.ExpectSymbol("(")
		a := p.Algorithm()
		p.ExpectSymbol(")")
		return &a
	}
	for p.Symbol(",") {
		key, word := "", ""
		for _, k := range []string{"CIPHER", "ASSISTED_QUERY", "ASSISTED_QUERY_COLUMN", "LIKE_QUERY", "LIKE_QUERY_COLUMN",
			"ENCRYPT_ALGORITHM", "ASSISTED_QUERY_ALGORITHM", "LIKE_QUERY_ALGORITHM"} {
			if p.At(k) {
				key, word = strings.TrimSuffix(k, "_COLUMN"), k
				break
			}
		}
		if key == "" {
			p.Fail("CIPHER or ASSISTED_QUERY or LIKE_QUERY or ENCRYPT_ALGORITHM or ASSISTED_QUERY_ALGORITHM or LIKE_QUERY_ALGORITHM expected")
		}
		if seen[key] {
			p.Fail("%s given twice", key)
		}
		seen[key] = true
		p.Expect(word)
		switch key {
		case "CIPHER":
			c.Cipher.Name = item("cipher column name").Name
		case "ASSISTED_QUERY":
			c.AssistedQuery = item("assisted query column name")
		case "LIKE_QUERY":
			c.LikeQuery = item("like query column name")
		case "ENCRYPT_ALGORITHM":
			c.Cipher.Algorithm = wrapped()
		case "ASSISTED_QUERY_ALGORITHM":
			assisted = wrapped()
		case "LIKE_QUERY_ALGORITHM":
			like = wrapped()
		}
	}
	switch {
	case c.Cipher.Name == "":
		p.Fail("CIPHER expected")
	case c.Cipher.Algorithm == nil:
		p.Fail("ENCRYPT_ALGORITHM expected")
	case assisted != nil && c.AssistedQuery == nil:
		p.Fail("ASSISTED_QUERY_ALGORITHM without ASSISTED_QUERY")
	case like != nil && c.LikeQuery == nil:
		p.Fail("LIKE_QUERY_ALGORITHM without LIKE_QUERY")
	}
	if c.AssistedQuery != nil {
		c.AssistedQuery.Algorithm = assisted
	}
	if c.LikeQuery != nil {
		c.LikeQuery.Algorithm = like
	}
	return name, c
}

// algorithmSPI is the SPI upstream names when an encrypt algorithm type
// does not exist.
const algorithmSPI = "org.apache.shardingsphere.encrypt.spi.EncryptAlgorithm"

// Algorithms are the encrypt algorithm types, as upstream's encrypt
// algorithms (and AES's properties provider) check them. Read-only.
var Algorithms = rule.Algorithms{
	"AES": {Class: "DefaultAESPropertiesProvider", Props: []rule.PropCheck{
		{Key: "aes-key-value", Check: rule.NotNullOrEmpty}, {Key: "digest-algorithm-name", Check: rule.NotNullOrEmpty}}},
	"RC4": {Class: "RC4EncryptAlgorithm", Props: []rule.PropCheck{{Key: "rc4-key-value", Check: rule.RC4Key}}},
	"MD5": {Class: "MD5AssistedEncryptAlgorithm"}, // salt is optional
	"CHAR_DIGEST_LIKE": {Class: "CharDigestLikeEncryptAlgorithm", Props: []rule.PropCheck{ // dict is optional
		{Key: "delta", Check: rule.Decimal}, {Key: "mask", Check: rule.Decimal}, {Key: "start", Check: rule.Decimal}}},
}

// supports is what each encrypt algorithm upstream ships supports (its
// EncryptAlgorithmMetaData): decrypt (a cipher's), equivalent filter (an
// assisted query's) and like (a like query's); class is its class's
// simple name, which upstream's refusals name.
var supports = map[string]struct {
	class                     string
	decrypt, equivalent, like bool
}{
	"AES":              {class: "AESEncryptAlgorithm", decrypt: true, equivalent: true},
	"RC4":              {class: "RC4EncryptAlgorithm", decrypt: true, equivalent: true},
	"MD5":              {class: "MD5AssistedEncryptAlgorithm", equivalent: true},
	"CHAR_DIGEST_LIKE": {class: "CharDigestLikeEncryptAlgorithm", like: true},
}

// items are the fields of an encrypt column that name an encryptor, in
// SHOW ENCRYPT RULES' order.
var items = []string{"cipher", "assistedQuery", "likeQuery"}

// value is a column's entry: its derived columns, their encryptors named
// "{table}_{column}", "assist_{table}_{column}" and
// "like_{table}_{column}" as upstream's EncryptRuleStatementConverter
// names them, added to algorithms once checked (the type exists, its
// props are ones its init accepts, it supports what the item needs).
func value(table, name string, col Column, algorithms map[string]any) (map[string]any, error) {
	if col.AssistedQuery != nil && col.AssistedQuery.Name == name || col.LikeQuery != nil && col.LikeQuery.Name == name {
		return nil, rule.InvalidRule("encrypt", table, "assisted query column or like query column conflicts with logic column")
	}
	cipher := col.Cipher
	out := map[string]any{}
	for _, it := range []struct {
		field, encryptor string
		item             *Item
		supports         func(typ string) bool
		cannot           string // upstream's reason when it does not
	}{
		{"cipher", table + "_" + name, &cipher, func(t string) bool { return supports[t].decrypt }, "Can not support decrypt"},
		{"assistedQuery", "assist_" + table + "_" + name, col.AssistedQuery, func(t string) bool { return supports[t].equivalent }, "Can not support assist query"},
		{"likeQuery", "like_" + table + "_" + name, col.LikeQuery, func(t string) bool { return supports[t].like }, "Can not support like"},
	} {
		if it.item == nil {
			continue
		}
		v := map[string]any{"name": it.item.Name}
		if a := it.item.Algorithm; a != nil {
			if err := rule.CheckSPIType(algorithmSPI, a.Type, Algorithms.Types()); err != nil {
				return nil, err
			}
			alg := rule.AlgorithmValue(*a)
			if err := Algorithms.Check(a.Type, rule.Map(alg["props"])); err != nil {
				return nil, err
			}
			if !it.supports(strings.ToUpper(a.Type)) {
				return nil, rule.AlgorithmInitialization(supports[strings.ToUpper(a.Type)].class, it.cannot)
			}
			algorithms[it.encryptor] = alg
			v["encryptorName"] = it.encryptor
		}
		out[it.field] = v
	}
	return out, nil
}

func uses(col map[string]any) []string {
	var names []string
	for _, f := range items {
		if n := rule.Text(rule.Map(col[f])["encryptorName"]); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// showRow is a row of SHOW ENCRYPT RULES (ShowEncryptRuleExecutor's
// columns).
func showRow(table, column string, col, c map[string]any) []string {
	encryptors := rule.Map(c["encryptors"])
	item := func(f string) (name string, encryptor map[string]any) {
		it := rule.Map(col[f])
		return rule.Text(it["name"]), rule.Map(encryptors[rule.Text(it["encryptorName"])])
	}
	cipher, enc := item("cipher")
	assisted, assistedEnc := item("assistedQuery")
	like, likeEnc := item("likeQuery")
	return []string{table, column, cipher, assisted, like, rule.Text(enc["type"]), rule.PropsText(enc["props"]),
		rule.Text(assistedEnc["type"]), rule.PropsText(assistedEnc["props"]), rule.Text(likeEnc["type"]), rule.PropsText(likeEnc["props"])}
}
