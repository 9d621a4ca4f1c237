// Package distvar is SET DIST VARIABLE: a global property (ShardingSphere's
// /props) changed by its variable name, persisted without touching the
// other properties, and confirmed by every shardkeeper node that applied
// it.
//
// The confirmation protocol: each shardkeeper node keeps an ephemeral key
// /nodes/props_applied/{instanceId} (see Acker) whose value is the /props
// active_version its metadata store has applied. Set writes the new /props
// version N, then watches those keys until every online node that has one
// reports N or later, or until its timeout: the nodes still behind are
// named in Outcome.Pending. ShardingSphere nodes read /props themselves but
// never write an acknowledgement (and never read these keys): an online
// node without a props_applied key is listed in Outcome.Unacknowledging,
// not waited for.
//
// The same acknowledgement confirms rule changes: after its /props version
// it lists, per database with rules, a digest of the rules the node's
// metadata applied (metadata.RulesDigest), and under the name GlobalRules
// the digest of its global rules (metadata.GlobalRulesDigest); WaitRules
// waits until every acknowledging node reports the digest of the rules the
// registry holds.
package distvar

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// DefaultTimeout is how long Set waits for acknowledgements when
// Options.Timeout is zero.
const DefaultTimeout = 3 * time.Second

// ShardingSphere's vendor codes of SET and SHOW DIST VARIABLE's refusals.
const (
	CodeUnsupportedVariable = 12010
	CodeInvalidValue        = 12011
)

// UnsupportedVariable is UnsupportedVariableException (12010, 44000): name
// is no variable.
func UnsupportedVariable(name string) *sqlerr.Error {
	return &sqlerr.Error{Code: CodeUnsupportedVariable, SQLState: "44000", Kind: sqlerr.NotFound, Message: fmt.Sprintf("Can not support variable '%s'.", name)}
}

// InvalidValue is InvalidVariableValueException (12011, HY004): value does
// not fit the variable; cause says why, for logs, and may be nil.
func InvalidValue(value string, cause error) *sqlerr.Error {
	return &sqlerr.Error{Code: CodeInvalidValue, SQLState: "HY004", Message: fmt.Sprintf("Invalid variable value '%s'.", value), Err: cause}
}

// VariableName is the variable name of the property key: sql-show ->
// sql_show, as SHOW DIST VARIABLES shows it.
func VariableName(key string) string { return strings.ReplaceAll(key, "-", "_") }

// Lookup returns the property a name read back designates (SHOW DIST
// VARIABLE, props get): the variable name in any case (sql_show,
// SQL_SHOW) or the dashed key (sql-show). SET takes variable names only
// (see Property).
func Lookup(name string) (config.PropKey, bool) {
	return config.LookupProp(strings.ReplaceAll(strings.ToLower(name), "_", "-"))
}

// Property returns the property a variable name designates: name is the
// upper- or lower-case enum name of a ConfigurationPropertyKey or
// TemporaryConfigurationPropertyKey (sql_show, SQL_SHOW), as upstream's
// SetDistVariableExecutor takes it. Dashed names (sql-show) are not
// variable names upstream and are refused as it refuses them. The error
// is an *sqlerr.Error with code 12010.
func Property(name string) (config.PropKey, error) {
	if !strings.ContainsRune(name, '-') {
		if k, ok := Lookup(name); ok {
			return k, nil
		}
	}
	return config.PropKey{}, UnsupportedVariable(name)
}

// Check validates value for the variable name and returns the property key
// (dashed, as /props stores it) and the value's canonical form. Booleans
// must be true or false (upstream's Boolean.valueOf turns any other text
// into false without a word), numbers must fit their Java type, enums must
// be one of their values, and proxy-meta-data-collector-cron must be a
// Quartz cron expression of 6 or 7 fields. The error is an *sqlerr.Error: 12010
// for the name, 12011 for the value.
func Check(name, value string) (key, canonical string, err error) {
	k, err := Property(name)
	if err != nil {
		return "", "", err
	}
	canonical, cerr := config.CheckProp(k.Name, value)
	if cerr == nil && k.Name == "proxy-meta-data-collector-cron" {
		if n := len(strings.Fields(value)); n != 6 && n != 7 {
			cerr = fmt.Errorf("%q is not a cron expression of 6 or 7 fields", value)
		}
	}
	if cerr == nil && k.Name == "proxy-frontend-database-protocol-type" && value != "" {
		canonical, cerr = databaseType(value)
	}
	if cerr != nil {
		return "", "", InvalidValue(value, cerr)
	}
	if len(k.Values) > 0 {
		canonical = strings.ToUpper(canonical)
	}
	return k.Name, canonical, nil
}

// databaseTypes are the front-end protocol types ShardingSphere's
// DatabaseType SPI knows, in their canonical spelling.
var databaseTypes = []string{"MySQL", "PostgreSQL", "openGauss", "MariaDB", "Oracle", "SQLServer", "H2", "SQL92", "ClickHouse", "Doris", "Hive", "Presto", "Firebird", "Sybase"}

func databaseType(value string) (string, error) {
	for _, t := range databaseTypes {
		if strings.EqualFold(t, value) {
			return t, nil
		}
	}
	return "", fmt.Errorf("%q is not a database type (%s)", value, strings.Join(databaseTypes, ", "))
}

// Options configures Set.
type Options struct {
	// Timeout bounds the wait for acknowledgements (not the write); zero
	// means DefaultTimeout.
	Timeout time.Duration
}

// Outcome is what Set did.
type Outcome struct {
	// Key and Value are the property and canonical value written; Version
	// is the /props version that holds them.
	Key     string
	Value   string
	Version int
	// Applied are the shardkeeper nodes that reported Version (or later),
	// Pending those that did not within the timeout, Unacknowledging the
	// online nodes that publish no acknowledgement (ShardingSphere nodes,
	// or a shardkeeper node still starting): they read /props by
	// themselves. Each list is sorted.
	Applied         []string
	Pending         []string
	Unacknowledging []string
	// Cleanup is what went wrong after the value was in force: the
	// deletion of older /props versions (the next write retries it).
	Cleanup []string
}

// Warnings are what a front end tells the user once the value is in
// force: the failed cleanup, then one line for Pending and one for
// Unacknowledging; none when every node confirmed and nothing failed.
func (o Outcome) Warnings() []string {
	w := slices.Clone(o.Cleanup)
	if len(o.Pending) > 0 {
		w = append(w, fmt.Sprintf("%s = %s is in the registry (/props version %d), but %d node(s) did not confirm applying it in time: %s",
			o.Key, o.Value, o.Version, len(o.Pending), strings.Join(o.Pending, ", ")))
	}
	if len(o.Unacknowledging) > 0 {
		w = append(w, fmt.Sprintf("%d node(s) apply %s without acknowledging (ShardingSphere nodes, or shardkeeper nodes still starting): %s",
			len(o.Unacknowledging), o.Key, strings.Join(o.Unacknowledging, ", ")))
	}
	return w
}

// Set checks name and value (see Check), merges the property into the
// registry's /props as a new version (the other properties are kept; a
// concurrent change of another property is not lost), then waits until
// every online shardkeeper node has applied that version or opts.Timeout
// passes. It returns an *sqlerr.Error for a bad name or value, before anything
// is written. Once the new version is active the change is made: a later
// failure to delete older versions is in Outcome.Cleanup, not an error. A
// timeout is not an error: the nodes that did not confirm
// are in Outcome.Pending. ctx bounds everything; when it ends during the
// wait, Set returns the Outcome so far and ctx's error.
func Set(ctx context.Context, repo registry.Repository, name, value string, opts Options) (Outcome, error) {
	key, canonical, err := Check(name, value)
	if err != nil {
		return Outcome{}, err
	}
	if config.Unsafe(config.UnsafeAckBeforeCommit) {
		// The chaos negative control (config.EnvUnsafeControl), never in
		// production: answered before /props is written.
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_, _ = metadata.MergeProps(ctx, repo, map[string]string{key: canonical})
		}()
		return Outcome{Key: key, Value: canonical}, nil
	}
	version, err := metadata.MergeProps(ctx, repo, map[string]string{key: canonical})
	var cleanup *metadata.CleanupError
	if err != nil && !errors.As(err, &cleanup) {
		return Outcome{}, fmt.Errorf("persist /props: %w", err)
	}
	out := Outcome{Key: key, Value: canonical, Version: version}
	if cleanup != nil {
		out.Cleanup = append(out.Cleanup, cleanup.Error())
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = Wait(wctx, repo, version, &out)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = nil
	}
	return out, err
}

// Wait fills out's Applied, Pending and Unacknowledging for /props version
// version: it reads the online nodes, then watches the acknowledgements
// until every online node that acknowledges reports version or later, or
// ctx ends (then it returns ctx's error with out filled as far as known).
func Wait(ctx context.Context, repo registry.Repository, version int, out *Outcome) error {
	return await(ctx, repo, func(a Ack) bool { return a.Props >= version }, out)
}

// WaitRules is Wait for a change of database db's rules (db GlobalRules:
// of the global rules): it waits until every online node that acknowledges
// reports the rules digest (see metadata.RulesDigest,
// metadata.GlobalRulesDigest) of db as digest, the digest of the rules the
// registry holds after the change.
func WaitRules(ctx context.Context, repo registry.Repository, db, digest string, out *Outcome) error {
	return await(ctx, repo, func(a Ack) bool { return a.Rules[db] == digest }, out)
}

// GlobalRules is the name under which an acknowledgement carries the
// digest of the global rules; no database has it (it is not a registry path
// segment).
const GlobalRules = "/"

// Ack is one node's acknowledgement: the /props version and, per
// database with rules (and GlobalRules when there are global rules), the
// digest of the rules its metadata applied.
type Ack struct {
	Props int
	Rules map[string]string
}

// String is the acknowledgement as the node writes it: the props version
// on the first line, then one "database digest" line per database, sorted
// (the global rules' line is "/ digest").
func (a Ack) String() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(a.Props))
	for _, db := range slices.Sorted(maps.Keys(a.Rules)) {
		b.WriteString("\n" + db + " " + a.Rules[db])
	}
	return b.String()
}

// ParseAck reads an acknowledgement; a malformed props version reads as -1.
func ParseAck(value []byte) Ack {
	lines := strings.Split(strings.TrimSpace(string(value)), "\n")
	a := Ack{Props: -1, Rules: map[string]string{}}
	if n, err := strconv.Atoi(strings.TrimSpace(lines[0])); err == nil {
		a.Props = n
	}
	for _, l := range lines[1:] {
		if db, digest, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			a.Rules[db] = digest
		}
	}
	return a
}

// await fills out as Wait does, a node counting as applied once done
// holds for its acknowledgement.
func await(ctx context.Context, repo registry.Repository, done func(Ack) bool, out *Outcome) error {
	if config.Unsafe(config.UnsafeAckBeforeCommit) {
		return nil // the chaos negative control (config.EnvUnsafeControl), never in production
	}
	online, err := onlineIDs(ctx, repo)
	if err != nil {
		return fmt.Errorf("list online nodes: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	initial, changes, err := repo.Watch(wctx, paths.PropsAppliedRoot)
	if err != nil {
		return fmt.Errorf("watch %s: %w", paths.PropsAppliedRoot, err)
	}
	acks := map[string]bool{}
	record := func(kv registry.KV, deleted bool) {
		if registry.IsUnder(kv.Key, paths.PropsAppliedRoot) && kv.Key != paths.PropsAppliedRoot {
			id := registry.Base(kv.Key)
			if deleted {
				delete(acks, id)
				return
			}
			acks[id] = done(ParseAck(kv.Value))
		}
	}
	for _, kv := range initial {
		record(kv, false)
	}
	for {
		if tally(online, acks, out) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-changes:
			if ctx.Err() != nil && (!ok || ev.Err != nil) {
				return ctx.Err()
			}
			if !ok {
				return fmt.Errorf("watch %s: %w: it ended without an error", paths.PropsAppliedRoot, registry.ErrUnavailable)
			}
			if ev.Err != nil {
				return fmt.Errorf("watch %s: %w", paths.PropsAppliedRoot, ev.Err)
			}
			record(ev.KV, ev.Type == registry.EventDelete)
		}
	}
}

// tally sorts online into out's lists and reports whether nobody is
// pending.
func tally(online []string, acks map[string]bool, out *Outcome) bool {
	out.Applied, out.Pending, out.Unacknowledging = nil, nil, nil
	for _, id := range online {
		applied, ok := acks[id]
		switch {
		case !ok:
			out.Unacknowledging = append(out.Unacknowledging, id)
		case applied:
			out.Applied = append(out.Applied, id)
		default:
			out.Pending = append(out.Pending, id)
		}
	}
	return len(out.Pending) == 0
}

// onlineIDs returns the sorted instance ids under the online root.
func onlineIDs(ctx context.Context, repo registry.Repository) ([]string, error) {
	kvs, err := repo.List(ctx, paths.OnlineRoot)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, kv := range kvs {
		if kind, id, _, ok := paths.InstanceIDFrom(kv.Key); ok && kind == "online" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
