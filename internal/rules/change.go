package rules

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/retry"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// The one change path of a rule: read, change, check, one transaction.
// Apply runs a statement's change through it and then waits for the
// nodes; the console's own changes of a rule (UNREGISTER STORAGE UNIT of
// the single rule's default unit) call ChangeRule.

// ChangeOptions configures ChangeRule and ChangeGlobalRule.
type ChangeOptions struct {
	// Layout places the rule items (the target ShardingSphere release).
	Layout paths.Layout
	// Session commits the transaction; nil means a session of the
	// change's own.
	Session registry.Session
	// Cache, when set, decodes the database read for a change from the
	// rule keys that changed since its last read (metadata.RuleCache);
	// nil decodes every rule item each time.
	Cache *metadata.RuleCache
}

// Written is what ChangeRule and ChangeGlobalRule wrote.
type Written struct {
	// Changed is false when the rule was left as it was (nothing written).
	Changed bool
	// Digest is metadata.RulesDigest of the database's rules the registry
	// holds after the change, which nodes acknowledge once they applied
	// it (distvar.WaitRules). When nothing was written (a no-op, or a
	// refusal decided from the rules read) it is the digest of the rules
	// the decision was made on, which a node's view reaches once it
	// applied them.
	Digest string
	// HasDigest is false when the change failed before it read the rules
	// (or lost to concurrent changes): Digest means nothing then.
	HasDigest bool
}

// ChangeFunc computes a rule's next content from cur, a copy of the rule
// read (config.CopyFields: its field maps are copies, their entries the
// values read, which it replaces rather than modifies), and the database
// as read. It may report the named entries it adds, replaces or removes
// in edits (rule.Edits): when it reports them all, what it changed is
// found by comparing those entries only.
type ChangeFunc func(read metadata.RuleRead, cur map[string]any, edits *rule.Edits) (map[string]any, error)

// ChangeRule changes database rule ruleType of database db, the way every
// rule statement does: it reads the database's units and rules from the
// registry (metadata.ReadDatabase; ErrNoDatabase is an
// *UnknownDatabaseError), lets change compute the next content from a copy
// of the rule (an empty map when the database has no such rule) and the
// database as read (read.DB: its units and its other rules, which change
// must not modify; with opts.Cache, read also carries the counts the
// cache keeps, such as ShardingNotPlain; change's error, an
// *sqlerr.Error, is returned as is), checks the
// database's rules with the result (every data source named is a storage unit or a logical
// data source, every algorithm named is defined and of a known type:
// upstream's codes; every item name fits a registry node, else 10200), and
// only then writes the items that differ as upstream persists them for
// opts.Layout, in one registry transaction conditioned on what it read
// (metadata.RuleWritesFrom): nothing is written when a check fails. When
// an item it read changed before the commit, it reads again and lets
// change compute again from what the registry holds now, after a jittered
// pause (at most changeAttempts times in all; then the error is the
// retryable conflict refusal, an *sqlerr.Error with CodeConflict and SQL
// state 40001 that wraps registry.ErrBadVersion, ErrExists or
// ErrNotFound), so that nothing another node wrote meanwhile
// is undone. An empty result removes the rule. The digest it returns is
// that of the rules the registry holds after the commit, read again
// (metadata.RuleCache.After); with a refusal decided from the rules read (change's
// error, a failed check) or a no-op it is the digest of the rules read,
// so that the caller can answer only once its node's view holds them (a
// refusal then reflects a state the registry held between the
// statement's start and its answer, and the node's next read does not
// contradict it). ctx bounds the reads and the commit (and is change's
// to use).
func ChangeRule(ctx context.Context, repo registry.Repository, db, ruleType string, change ChangeFunc, opts ChangeOptions) (Written, error) {
	for attempt := 1; ; attempt++ {
		rc, err := changeRuleOnce(ctx, repo, db, ruleType, change, opts)
		if !changedMeanwhile(err) {
			return rc, err
		}
		if attempt == changeAttempts {
			return Written{}, conflict(err)
		}
		if !pauseBeforeAgain(ctx, attempt) {
			return Written{}, ctx.Err()
		}
		// A rule changed between the read and the commit: compute again.
	}
}

// changeRuleOnce is one read, change, check and commit of ChangeRule.
func changeRuleOnce(ctx context.Context, repo registry.Repository, db, ruleType string, change ChangeFunc, opts ChangeOptions) (Written, error) {
	read, err := opts.Cache.Read(ctx, repo, db)
	if errors.Is(err, metadata.ErrNoDatabase) {
		return Written{}, &dbconfig.UnknownDatabaseError{Name: db}
	}
	if err != nil {
		return Written{}, fmt.Errorf("read database %s: %w", db, err)
	}
	d, keys := read.DB, read.Keys
	if !registry.ListIsRangeRead(repo) { // a range read is one snapshot: never torn
		if err := dbconfig.TornRead(keys); err != nil {
			return Written{}, err // read again
		}
	}
	rules := d.Rules
	old := rules[ruleType]
	old.Type = ruleType
	// The change works on a copy of the rule's fields whose entries are
	// the ones read: those it replaces are told apart by identity, so that
	// what follows costs what the change changed (metadata.RuleChangeWrites).
	cur := config.CopyFields(old.Content)
	fresh := metadata.FieldMaps(cur) // the copies, before the change can put other maps in their place
	refused := func(err error) (Written, error) { return Written{Digest: d.RulesDigest(), HasDigest: true}, err }
	edits := rule.NewEdits()
	next, err := change(read, cur, edits)
	if err != nil {
		return refused(err)
	}
	nextRule := config.Rule{Type: ruleType, Content: next}
	// The database as it would be, for the checks.
	cfg := config.Database{Name: db, DataSources: d.Units}
	for typ, r := range rules {
		if typ != ruleType {
			cfg.Rules = append(cfg.Rules, r)
		}
	}
	if len(next) > 0 {
		cfg.Rules = append(cfg.Rules, nextRule)
	}
	// What differs from the rule read, compared once for the checks and
	// the writes.
	var diff *metadata.Diff
	if old.Content != nil && len(next) > 0 {
		diff = metadata.DiffOfEdits(ruleType, old.Content, next, edits)
	}
	var beforeNames *int // without a cache, the check counts where it needs to
	if opts.Cache != nil {
		n := read.ShardingNames()
		beforeNames = &n
	}
	errs, err := dbconfig.CheckChange(ctx, cfg, dbconfig.RuleChange{Type: ruleType, Before: old.Content, BeforeNames: beforeNames, BeforeUses: read.ShardingUses(), Diff: diff}) // KILL, or the client gone: nothing more is done
	if err != nil {
		return Written{}, err
	}
	if len(errs) > 0 {
		return refused(errs[0])
	}
	if len(next) > 0 {
		named := next // the names to check: with a diff, its entries (a new name is one of them)
		if diff != nil {
			named = diff.SparseNext
		}
		if err := checkItemNames(db, ruleType, named, old.Content); err != nil {
			return refused(err)
		}
		if err := metadata.CheckRuleReaders(ctx, repo, opts.Layout, db, nextRule); err != nil {
			return Written{}, err
		}
	} else {
		nextRule.Content = nil
	}
	conds, ops, err := metadata.RuleDiffWrites(opts.Layout, db, keys, old, nextRule, diff)
	var unwritable *metadata.NotWritableError
	if errors.As(err, &unwritable) {
		return refused(rule.InvalidRule(ruleType, "", unwritable.Err.Error()))
	}
	if err != nil {
		return Written{}, err
	}
	if len(ops) == 0 {
		return Written{Digest: d.RulesDigest(), HasDigest: true}, nil
	}
	committed, err := dbconfig.CommitOne(ctx, repo, opts.Session, registry.Txn{Conds: conds, Ops: ops})
	if err != nil {
		return Written{}, err
	}
	// The change's own field maps (still copies of the rule read's, but
	// for what it changed) go to the cache, which applies the written
	// items to them instead of copying the rule read's fields again.
	var built *metadata.Built
	if diff != nil {
		built = &metadata.Built{Type: ruleType, Old: old.Content, Fields: metadata.OwnedFields(fresh, next), Diff: diff}
	}
	return Written{Changed: true, Digest: opts.Cache.After(ctx, repo, read, ops, committed, built).RulesDigest(), HasDigest: true}, nil
}

// changeAttempts bounds how often ChangeRule and ChangeGlobalRule read and
// commit again while the rules keep changing under them; before each new
// attempt they pause (pauseBeforeAgain), so that changes racing on several
// nodes spread out instead of colliding again at once.
const changeAttempts = 10

// Pauses between attempts: changeBackoffBase doubled per attempt, at most
// changeBackoffMax, each drawn at random from its upper half.
const (
	changeBackoffBase = 10 * time.Millisecond
	changeBackoffMax  = 400 * time.Millisecond
)

// pauseBeforeAgain waits before attempt+1, a jittered exponential backoff;
// it reports false when ctx ended first.
func pauseBeforeAgain(ctx context.Context, attempt int) bool {
	d := retry.Backoff(attempt-1, changeBackoffBase, changeBackoffMax)
	d = d/2 + rand.N(d/2+1)
	return retry.Sleep(ctx, d)
}

// CodeConflict is the vendor code of the refusal of a rule change that
// kept losing to concurrent changes (Conflict); its SQL state is 40001
// (serialization failure), which clients treat as "run it again".
const CodeConflict = 17010

// conflict is the refusal of a change that lost changeAttempts times in a
// row to changes other nodes committed between its read and its commit
// nothing of it was written, and running
// it again is safe. It wraps err, the last failed condition.
func conflict(err error) *sqlerr.Error {
	return &sqlerr.Error{Code: CodeConflict, SQLState: "40001", Kind: sqlerr.Conflict, Err: err, Message: fmt.Sprintf(
		"Cluster persist repository error, reason is: the rules kept changing on other nodes while this statement was written (%d attempts); nothing was written: run it again.", changeAttempts)}
}

// changedMeanwhile reports whether err is a commit's failed condition: a
// key read changed before the commit.
func changedMeanwhile(err error) bool {
	var oe *registry.OpError
	return errors.As(err, &oe) &&
		(errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrExists) || errors.Is(err, registry.ErrNotFound))
}

// ChangeGlobalRule changes global rule ruleType: it reads the global rules
// (metadata.ReadGlobalRules), lets change compute the rule's next content
// from a copy of its current one (an empty map when the registry has none;
// change's error, an *sqlerr.Error, is returned as is), and writes it as
// upstream persists it (a new version of /rules/{type}) in one registry
// transaction conditioned on every global rule it read. When any global
// rule changed between the read and the commit, it reads again and lets
// change compute again from what the registry holds now, after a jittered
// pause (at most changeAttempts times in all; then the error is the
// conflict refusal, CodeConflict, wrapping registry.ErrBadVersion or
// ErrExists), so that nothing another node wrote
// meanwhile is undone. It returns the digest of the global rules the
// registry holds after it (metadata.GlobalRulesDigest), which nodes
// acknowledge under distvar.GlobalRules once they applied it; with a
// refusal (change's error, a failed check) the digest of the global rules
// the refusal was decided on. ctx bounds the reads and the commit.
func ChangeGlobalRule(ctx context.Context, repo registry.Repository, ruleType string, change func(content map[string]any) (map[string]any, error), opts ChangeOptions) (Written, error) {
	if !config.IsGlobalRuleType(ruleType) {
		return Written{}, fmt.Errorf("%q is not a global rule type", ruleType)
	}
	for attempt := 1; ; attempt++ {
		rules, kvs, err := metadata.ReadGlobalRules(ctx, repo)
		if err != nil {
			return Written{}, fmt.Errorf("read the global rules: %w", err)
		}
		cur := config.CloneContent(rules[ruleType].Content)
		if cur == nil {
			cur = map[string]any{}
		}
		// A refusal is decided from the rules read.
		refused := Written{Digest: metadata.GlobalRulesDigest(rules), HasDigest: true}
		next, err := change(cur)
		if err != nil {
			return refused, err
		}
		if err := rule.CheckProps(ruleType, next); err != nil {
			return refused, err
		}
		conds, ops, err := metadata.GlobalRuleWritesFrom(kvs, config.Rule{Type: ruleType, Content: next})
		if err != nil {
			return Written{}, err
		}
		_, err = dbconfig.CommitOne(ctx, repo, opts.Session, registry.Txn{Conds: conds, Ops: ops})
		if err == nil {
			after := metadata.DecodeGlobalRules(metadata.AfterOps(kvs, ops))
			return Written{Changed: true, Digest: metadata.GlobalRulesDigest(after), HasDigest: true}, nil
		}
		if !changedMeanwhile(err) {
			return Written{}, err
		}
		if attempt == changeAttempts {
			return Written{}, conflict(err)
		}
		if !pauseBeforeAgain(ctx, attempt) {
			return Written{}, ctx.Err()
		}
		// A global rule changed meanwhile: compute again.
	}
}

// checkItemNames refuses a named item of content (of a rule of type typ)
// whose name cannot be a registry node (a '/', ".", ...), with upstream's
// InvalidRuleConfigurationException. Names old's same field has were
// checked when they were written (or an upstream node wrote them): only
// new names are.
func checkItemNames(db, typ string, content, old map[string]any) error {
	for field, v := range content {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		had, _ := old[field].(map[string]any)
		for name := range m {
			if _, ok := had[name]; ok {
				continue
			}
			if strings.Contains(name, "/") {
				return rule.InvalidRule(typ, name, "the name may not contain '/'")
			}
			if _, err := paths.RuleItem(db, typ, field, name); err != nil {
				return rule.InvalidRule(typ, name, err.Error())
			}
		}
	}
	return nil
}
