package rule

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// MaxAlgorithmProps is the most props one algorithm (sharding, key
// generator, auditor, readwrite-splitting load balancer, shadow, mask,
// encrypt) and one global rule may have; upstream's take a handful.
const MaxAlgorithmProps = 1000

// CheckProps refuses rule content c of rule type ruleType (a database
// rule or a global rule) when a props mapping anywhere in it, whatever
// the algorithm or rule it belongs to, has more than MaxAlgorithmProps
// entries: InvalidRule (10200), naming where. It walks c once, in time
// linear in its size, and returns nil when every props mapping is within
// the bound.
func CheckProps(ruleType string, c map[string]any) *sqlerr.Error {
	var walk func(where string, v any) *sqlerr.Error
	walk = func(where string, v any) *sqlerr.Error {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if props, ok := child.(map[string]any); ok && k == "props" && len(props) > MaxAlgorithmProps {
					return InvalidRule(ruleType, where, fmt.Sprintf("the props of '%s' hold %d entries, more than the %d one algorithm may have", where, len(props), MaxAlgorithmProps))
				}
				path := k
				if where != "" {
					path = where + "." + k
				}
				if err := walk(path, child); err != nil {
					return err
				}
			}
		case []any:
			for i, child := range v {
				if err := walk(fmt.Sprintf("%s[%d]", where, i), child); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("", c)
}

// CheckAlgorithms checks the algorithm definitions defs ({name: {type,
// props}}) of kind: each has a type (10401), one of known (10404; known
// nil accepts any, as for the mask and encrypt algorithms, which
// upstream's plugins add to), whose props its upstream init accepts as
// family checks them (10400, the message naming the algorithm; a type
// family does not have is not checked). The number of props is
// CheckProps's to bound, for the whole rule, before this runs.
func CheckAlgorithms(dbName, kind string, defs map[string]any, known []string, family Algorithms) []*sqlerr.Error {
	var errs []*sqlerr.Error
	for _, name := range SortedKeys(defs) {
		def := Map(defs[name])
		typ, _ := def["type"].(string)
		if typ == "" {
			errs = append(errs, &sqlerr.Error{Code: 10401, SQLState: "42S02", Message: fmt.Sprintf("'%s' algorithm on database.%s is required.", kind, name)})
			continue
		}
		if known != nil && !slices.Contains(known, strings.ToUpper(typ)) {
			errs = append(errs, &sqlerr.Error{Code: 10404, SQLState: "44000", Message: fmt.Sprintf("Invalid %s algorithm configuration '%s': there is no algorithm of type '%s' (known: %s).", kind, name, typ, strings.Join(known, ", "))})
			continue
		}
		if err := family.Check(typ, Map(def["props"])); err != nil {
			err.Message = fmt.Sprintf("%s algorithm '%s' of database '%s': %s", kind, name, dbName, err.Message)
			errs = append(errs, err)
		}
	}
	return errs
}

// ColumnAlgorithm is a field of a mask or encrypt column that names an
// algorithm ("cipher.encryptorName": field encryptorName of the column's
// cipher), and the algorithm's kind as upstream's checker names it.
type ColumnAlgorithm struct{ Kind, Field string }

// CheckColumnAlgorithms checks that every algorithm the columns of the
// tables of rule content c name (fields) is defined in section, as
// upstream's MaskRuleConfigurationChecker and
// EncryptRuleConfigurationChecker do (UnregisteredAlgorithmException,
// 10402).
func CheckColumnAlgorithms(dbName string, c map[string]any, section string, fields []ColumnAlgorithm) []*sqlerr.Error {
	var errs []*sqlerr.Error
	algorithms := Map(c[section])
	tables := Map(c["tables"])
	for _, table := range SortedKeys(tables) {
		columns := Map(Map(tables[table])["columns"])
		for _, column := range SortedKeys(columns) {
			for _, f := range fields {
				v := columns[column]
				for _, part := range strings.Split(f.Field, ".") {
					v = Map(v)[part]
				}
				name, _ := v.(string)
				if _, ok := algorithms[name]; name != "" && !ok {
					errs = append(errs, &sqlerr.Error{Code: 10402, SQLState: "42S02", Message: fmt.Sprintf("'%s' algorithm '%s' on %s.%s.%s is unregistered.", f.Kind, name, dbName, table, column)})
				}
			}
		}
	}
	return errs
}
