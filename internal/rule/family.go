package rule

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// Family is one rule family: everything about one type of database rule,
// in one package. The families are listed in internal/rule/families;
// nothing outside a family's package knows its statements, its content's
// fields or its refusals.
type Family interface {
	// Type is the rule's type in the registry and in configs ("mask").
	Type() string
	// Statements names the family's rule changes, for the messages of
	// front ends that refuse another statement ("CREATE, ALTER and DROP
	// MASK RULE").
	Statements() string
	// Read reads a statement of the family when one starts at p; ok is
	// false, with nothing consumed, when none does.
	Read(p *distsql.Parser) (st distsql.Statement, ok bool)
	// Change is the change statement st makes to the family's rule; nil
	// when st is none of the family's changes.
	Change(st distsql.Statement) Change
	// Show answers st, a query of the family, from the statement's
	// database and the content of the family's rule there (nil when it has
	// none), which read returns; ok is false, with nothing read, when st is
	// none of the family's queries. ctx bounds what it reads of the units
	// (Database.Tables).
	Show(ctx context.Context, st distsql.Statement, read Read) (rows Rows, ok bool, err error)
	// Check checks the family's rule content c in database d as upstream's
	// rule checker does before anything is written (import, every
	// change), algorithm props included; it returns every problem. Once
	// ctx is done it may stop and return ctx's error (a family that reads
	// or expands nothing large never does).
	Check(ctx context.Context, d Database, c map[string]any) ([]*sqlerr.Error, error)
	// Units returns the items of c, a rule of database d, that use
	// storage units, and the units each uses, in the items' order; data
	// sources the rules define (Defines) count as units here.
	Units(d Database, c map[string]any) []Use
	// Defines returns the logical data sources c defines (readwrite
	// splitting groups, shadow data sources), which other rules may name
	// as they name storage units.
	Defines(c map[string]any) []string
	// Count is what COUNT <family> RULE answers for c, a rule of database
	// d (nil when d has none): the numbers of its rules as upstream's count
	// row builder counts them, one row each; none for a nil c unless
	// upstream always builds the rule (single). ctx bounds what it reads of
	// the units (Database.Tables).
	Count(ctx context.Context, d Database, c map[string]any) ([]Counted, error)
	// Convert is what CONVERT YAML CONFIGURATION writes for c: the DistSQL
	// statements that create it; ok is false when the family's statements
	// cannot (the rule is then named as not converted).
	Convert(c map[string]any) (statements []string, ok bool)
	// Upstream rewrites c, a copy, in place as layout's release of
	// upstream's YAML swapper writes it (the fields a node persists beyond
	// the map keys); an error says what of c that release cannot store,
	// and c is then not to be written. Only the sharding rule's form
	// depends on the release today; the others ignore layout and never
	// fail.
	Upstream(layout paths.Layout, c map[string]any) error
	// Items is how the registry holds the rule's content as items, the
	// same for every release a node writes.
	Items() Items
}

// Items is how a rule's content is laid out as registry items
// (/metadata/{db}/rules/{type}/{item}[/{name}], reference 1.6). Every
// field not named here is one unique item, YAML-encoded.
type Items struct {
	// Named are the fields whose Java type is a Map: one item per entry.
	Named []string
	// KeyLists are collections stored one item per element, named by the
	// part of the element before ":" (or the whole element).
	KeyLists []string
	// Raw are the string fields stored as they are, not YAML-encoded.
	Raw []string
}

// Read returns what a family's query reads: the statement's database and
// the content of the family's rule there (nil when it has none).
type Read func() (Database, map[string]any, error)

// ShowContent is a family's Show for queries answered from the rule's
// content alone: show answers st from c (nil c when probing) and says
// whether st is its query.
func ShowContent(st distsql.Statement, read Read, show func(st distsql.Statement, c map[string]any) (Rows, bool)) (Rows, bool, error) {
	if _, ok := show(st, nil); !ok {
		return Rows{}, false, nil
	}
	_, c, err := read()
	if err != nil {
		return Rows{}, true, err
	}
	rows, _ := show(st, c)
	return rows, true, nil
}

// Change computes a rule's next content from a copy of its current one
// (empty when the database has no such rule), reading database d (its
// units and other rules, not to be modified); ctx bounds any I/O. It
// returns the content unchanged for a statement that changes nothing (IF
// EXISTS, IF NOT EXISTS) and an empty map to remove the rule.
type Change func(ctx context.Context, d Database, c map[string]any) (map[string]any, error)

// Database is what a family's change and check read of a database
// besides its own rule.
type Database struct {
	Name string
	// Units are the names of its storage units.
	Units []string
	// Rules are its rules' contents by type; read-only.
	Rules map[string]map[string]any
	// Sources are the data source names a rule may name: the units and
	// the logical data sources the rules define (Family.Defines).
	Sources map[string]bool
	// InUse, when set, maps each data source name the database's rules
	// other than its broadcast tables name onto those rules' classes
	// (ShardingRule, ReadwriteSplittingRule, ...), as the change path
	// computes them; a change that removes a data source reads it.
	InUse func() map[string][]string
	// Tables, when set, reads the tables of the named storage units from
	// the units themselves: each unit's tables, as "table" or, for a unit
	// whose database has schemas, "schema.table", in name order; ctx bounds
	// the reads, and a unit it cannot read is an *sqlerr.Error (upstream's
	// 10502). Nil when the caller reads no unit: the units' tables are
	// then none.
	Tables func(ctx context.Context, units []string) (map[string][]string, error)
	// Schemas is true when the units' databases have schemas (PostgreSQL,
	// openGauss): a table's schema is then shown.
	Schemas bool
	// Changing is the type of the rule a change changes, for the checks
	// (Family.Check): "" when every rule is checked as new (an import).
	// Before is that rule's content before the change (nil for a new
	// rule): a check may hold bounds on what the change adds to it only,
	// since another node may have written the rest (the sharding rule's
	// name bounds).
	Changing string
	Before   map[string]any
	// BeforeNames, when set, is how many names Before's expressions stand
	// for (the sharding rule's data nodes and data sources: its
	// sharding.Tally), as the caller counted them while following the
	// rule's changes; nil: a check that needs the number counts it.
	BeforeNames *int
	// BeforeUses, when set, counts the entries of the sharding rule as
	// read (Before, for a check; Rules[sharding], for a change) that refer
	// to a name of a section: how many tables, auto tables and key
	// generate strategies name sharding algorithm name
	// ("shardingAlgorithms"), key generator name ("keyGenerators") or
	// auditor name ("auditors"); the defaults are not counted
	// (sharding.Tally.Uses). The caller keeps it as it follows the rule's
	// changes, so that a change that removes a table or an algorithm
	// learns whether a name is still used without a scan of every table;
	// nil: a change or check that needs it scans.
	BeforeUses func(section, name string) int
	// Edits, when set, is where a change reports the named entries it
	// added, replaced or removed (Edits); nil: it need not.
	Edits *Edits
	// ShardingNotPlain, when set, is how many table names of the sharding
	// rule as read are not plain (sharding.PlainName), by section
	// ("tables", "autoTables"), as the caller counted them while
	// following the rule's changes (its sharding.Tally), so that a
	// change finds a table by name in any case by lookup instead of a
	// scan of every table; nil: a change scans. A new map, the change's
	// to keep up to date as it adds names.
	ShardingNotPlain map[string]int
	// Changed, when set, names the entries of the changing rule's named
	// fields (its map fields: tables, algorithms, ...) that the change
	// added, replaced or removed, by field and name (what
	// metadata.ChangedEntries finds), so that a check need not compare
	// every entry with Before's; nil: a check that needs them compares.
	Changed map[[2]string]bool
}

// Use is an item of a rule and the storage units it uses. Item is "" when
// the rule as a whole uses them (broadcast tables live on every unit):
// SHOW RULES USED STORAGE UNIT lists the named items only, as upstream.
type Use struct {
	Item  string
	Units []string
}

// Counted is one row of COUNT <family> RULE: what is counted
// (upstream's rule_name, "mask", "broadcast_table") and how many.
type Counted struct {
	Rule  string
	Count int
}

// Rows is the answer of a query: text columns, rows of text.
type Rows struct {
	Columns []string
	Rows    [][]string
}

// Global is one global rule (authority, transaction, sql_parser, ...): a
// rule of the cluster, not of a database, which SHOW shows and ALTER
// changes whole (settings not given keep their value). The global rules
// are listed in internal/rule/families beside the families; nothing
// outside their package knows their statements or their content's fields.
// A global rule has no units, defines no data sources and is not counted,
// so it is not a Family.
type Global interface {
	// Type is the rule's type in the registry and in configs
	// ("transaction").
	Type() string
	// Statements names the rule's changes, for the messages of front ends
	// that refuse another statement ("ALTER TRANSACTION RULE"); "" when
	// the rule has none (upstream has no ALTER AUTHORITY RULE).
	Statements() string
	// Read reads a statement of the rule when one starts at p; ok is
	// false, with nothing consumed, when none does.
	Read(p *distsql.Parser) (st distsql.Statement, ok bool)
	// Change is the change statement st makes to the rule; nil when st is
	// none of the rule's changes.
	Change(st distsql.Statement) GlobalChange
	// Show answers st, the rule's query, from the rule's content c (nil
	// when the registry has none: the rule ShardingSphere builds then is
	// shown), with upstream's columns; ok is false when st is not the
	// rule's query. The caller masks secrets in c beforehand.
	Show(st distsql.Statement, c map[string]any) (rows Rows, ok bool)
	// Upstream rewrites c, a copy, in place as upstream's YAML swapper
	// writes it (the defaults a node persists beyond the map keys).
	Upstream(c map[string]any)
}

// GlobalChange computes a global rule's next content from a copy of its
// current one (empty when the registry has none); a refusal is an
// *sqlerr.Error, before anything is written.
type GlobalChange func(c map[string]any) (map[string]any, error)
