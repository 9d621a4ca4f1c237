package rule

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// Upstream's refusals of rule statements and rule checks, with its codes,
// SQL states and messages.

// JavaList is a collection as upstream's messages print it: [a, b].
func JavaList(names []string) string { return "[" + strings.Join(names, ", ") + "]" }

// DuplicateRule is DuplicateRuleException (10204, 42S01).
func DuplicateRule(ruleType, db string, names []string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10204, SQLState: "42S01", Message: fmt.Sprintf("Duplicate %s rule names '%s' in database '%s'.", ruleType, JavaList(names), db)}
}

// MissingRule is MissingRequiredRuleException (10202, 42S02).
func MissingRule(ruleType, db string, names []string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10202, SQLState: "42S02", Message: fmt.Sprintf("%s rules '%s' do not exist in database '%s'.", ruleType, JavaList(names), db)}
}

// RuleInUse is InUsedRuleException (10203, 44000).
func RuleInUse(ruleType, db string, names []string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10203, SQLState: "44000", Message: fmt.Sprintf("%s rules '%s' in database '%s' are still in used.", ruleType, JavaList(names), db)}
}

// MissingAlgorithm is MissingRequiredAlgorithmException (10401, 44000).
func MissingAlgorithm(kind, db string, names []string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10401, SQLState: "44000", Message: fmt.Sprintf("'%s' algorithm on %s.%s is required.", kind, db, JavaList(names))}
}

// AlgorithmInUse is InUsedAlgorithmException (10403, 44000).
func AlgorithmInUse(kind, db string, names []string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10403, SQLState: "44000", Message: fmt.Sprintf("%s algorithms '%s' in database '%s' are still in used.", kind, JavaList(names), db)}
}

// InvalidAlgorithm is InvalidAlgorithmConfigurationException (10404, 44000).
func InvalidAlgorithm(kind, typ, reason string) *sqlerr.Error {
	msg := fmt.Sprintf("Invalid %s algorithm configuration '%s'.", kind, typ)
	if reason != "" {
		msg = fmt.Sprintf("Invalid %s algorithm configuration '%s'. %s.", kind, typ, reason)
	}
	return &sqlerr.Error{Code: 10404, SQLState: "44000", Message: msg}
}

// UnregisteredAlgorithm is UnregisteredAlgorithmException (10402, 42S02):
// algorithm name of kind, named at where (db.table.column, ...), is not
// defined.
func UnregisteredAlgorithm(kind, name, where string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10402, SQLState: "42S02", Message: fmt.Sprintf("'%s' algorithm '%s' on %s is unregistered.", kind, name, where)}
}

// ServiceNotFound is ServiceProviderNotFoundException (SPI-00001): no
// implementation of spi has type typ.
func ServiceNotFound(spi, typ string) *sqlerr.Error {
	return &sqlerr.Error{Code: 30000, SQLState: "HY000", Message: fmt.Sprintf("SPI-00001: No implementation class load from SPI '%s' with type '%s'.", spi, typ)}
}

// CheckSPIType refuses an algorithm type that is not one of known (upper
// case) as upstream's TypedSPILoader.checkService does (ServiceNotFound).
func CheckSPIType(spi, typ string, known []string) error {
	if !slices.Contains(known, strings.ToUpper(typ)) {
		return ServiceNotFound(spi, typ)
	}
	return nil
}

// InvalidRule is InvalidRuleConfigurationException (10200, 44000): rule
// name of type ruleType is refused for msg.
func InvalidRule(ruleType, name, msg string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10200, SQLState: "44000", Message: fmt.Sprintf("Invalid '%s' rule '%s', error message is: %s", ruleType, name, msg)}
}

// EmptyStorageUnits is EmptyStorageUnitException (10101, 42S02): database
// db has no storage unit.
func EmptyStorageUnits(db string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10101, SQLState: "42S02", Message: fmt.Sprintf("There is no storage unit in database '%s'.", db)}
}

// MissingStorageUnits is MissingRequiredStorageUnitsException (10102,
// 44000): the units names are not storage units of database db.
func MissingStorageUnits(db string, names []string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10102, SQLState: "44000", Message: fmt.Sprintf("Storage units '%s' do not exist in database '%s'.", JavaList(names), db)}
}

// CheckName refuses a name that cannot name a registry node (InvalidRule).
func CheckName(ruleType, name string) error {
	if strings.Contains(name, "/") {
		return InvalidRule(ruleType, name, "the name may not contain '/'")
	}
	if _, err := paths.RuleItem("db", "r", "i", name); err != nil {
		return InvalidRule(ruleType, name, err.Error())
	}
	return nil
}
