package rules

import (
	"context"
	"fmt"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
)

// The encrypt rule statements: CREATE, ALTER and DROP ENCRYPT RULE, as
// upstream's Create/Alter/DropEncryptRuleExecutor check and write them.
// The rule's content is upstream's YAML: tables: {t: {columns: {c:
// {cipher: {name, encryptorName}, assistedQuery: {...}, likeQuery:
// {...}}}}}, encryptors: {name: {type, props}}.

// encryptItems are the fields of an encrypt column that name an
// encryptor, in SHOW ENCRYPT RULES' order.
var encryptItems = []string{"cipher", "assistedQuery", "likeQuery"}

var encryptRule = tableRule{
	ruleType:   "encrypt",
	label:      "Encrypt",
	algorithms: "encryptors",
	uses: func(col map[string]any) []string {
		var names []string
		for _, f := range encryptItems {
			if n := Text(Map(col[f])["encryptorName"]); n != "" {
				names = append(names, n)
			}
		}
		return names
	},
}

// encryptAlgorithmSPI is the SPI upstream names when an encrypt algorithm
// type does not exist.
const encryptAlgorithmSPI = "org.apache.shardingsphere.encrypt.spi.EncryptAlgorithm"

// What each encrypt algorithm upstream ships supports (its
// EncryptAlgorithmMetaData): decrypt (a cipher's), equivalent filter (an
// assisted query's) and like (a like query's); class is its class's simple
// name, which upstream's refusals name.
var encryptSupports = map[string]struct {
	class                     string
	decrypt, equivalent, like bool
}{
	"AES":              {class: "AESEncryptAlgorithm", decrypt: true, equivalent: true},
	"RC4":              {class: "RC4EncryptAlgorithm", decrypt: true, equivalent: true},
	"MD5":              {class: "MD5AssistedEncryptAlgorithm", equivalent: true},
	"CHAR_DIGEST_LIKE": {class: "CharDigestLikeEncryptAlgorithm", like: true},
}

// encryptItem is one derived column of an encrypt column as the statement
// gives it, with the rule's field, its generated encryptor name and what
// its algorithm must support.
type encryptItem struct {
	field, encryptor string
	item             *distsql.EncryptColumnItem
	supports         func(typ string) bool
	cannot           string // upstream's reason when it does not
}

// encryptDefinitions turns the rules of CREATE or ALTER ENCRYPT RULE into
// table definitions: a column's encryptors are named "{table}_{column}",
// "assist_{table}_{column}" and "like_{table}_{column}", as upstream's
// EncryptRuleStatementConverter names them.
func encryptDefinitions(rules []distsql.EncryptRule) []tableDefinition {
	defs := make([]tableDefinition, 0, len(rules))
	for _, r := range rules {
		defs = append(defs, tableDefinition{table: r.Table, value: func(c map[string]any) (map[string]any, error) {
			columns := map[string]any{}
			for _, col := range r.Columns {
				if _, twice := columns[col.Name]; twice {
					return nil, dbconfig.InvalidRule("encrypt", r.Table, fmt.Sprintf("column '%s' is named twice", col.Name))
				}
				if col.AssistedQuery != nil && col.AssistedQuery.Name == col.Name || col.LikeQuery != nil && col.LikeQuery.Name == col.Name {
					return nil, dbconfig.InvalidRule("encrypt", r.Table, "assisted query column or like query column conflicts with logic column")
				}
				cipher := col.Cipher
				value := map[string]any{}
				for _, it := range []encryptItem{
					{"cipher", r.Table + "_" + col.Name, &cipher, func(t string) bool { return encryptSupports[t].decrypt }, "Can not support decrypt"},
					{"assistedQuery", "assist_" + r.Table + "_" + col.Name, col.AssistedQuery, func(t string) bool { return encryptSupports[t].equivalent }, "Can not support assist query"},
					{"likeQuery", "like_" + r.Table + "_" + col.Name, col.LikeQuery, func(t string) bool { return encryptSupports[t].like }, "Can not support like"},
				} {
					if it.item == nil {
						continue
					}
					v := map[string]any{"name": it.item.Name}
					if a := it.item.Algorithm; a != nil {
						if err := checkSPIType(encryptAlgorithmSPI, a.Type, dbconfig.EncryptAlgorithmTypes); err != nil {
							return nil, err
						}
						alg := algorithmValue(*a)
						if err := dbconfig.EncryptAlgorithms.Check(a.Type, Map(alg["props"])); err != nil {
							return nil, err
						}
						if !it.supports(strings.ToUpper(a.Type)) {
							return nil, dbconfig.AlgorithmInitialization(encryptSupports[strings.ToUpper(a.Type)].class, it.cannot)
						}
						section(c, "encryptors")[it.encryptor] = alg
						v["encryptorName"] = it.encryptor
					}
					value[it.field] = v
				}
				columns[col.Name] = value
			}
			return map[string]any{"columns": columns}, nil
		}})
	}
	return defs
}

// createEncryptRule is CREATE ENCRYPT RULE: the tables defined as for
// ALTER, and, checked last as upstream's executor checks it, a database
// without storage units refused (EmptyStorageUnitException, 10101).
func createEncryptRule(st *distsql.CreateEncryptRule) databaseChange {
	_, define := encryptRule.define(encryptDefinitions(st.Rules), st.IfNotExists, false)
	return func(_ context.Context, d *metadata.Database, c map[string]any) (map[string]any, error) {
		next, err := define(d.Name, c)
		if err != nil {
			return nil, err
		}
		if len(d.Units) == 0 {
			return nil, dbconfig.EmptyStorageUnits(d.Name)
		}
		return next, nil
	}
}
