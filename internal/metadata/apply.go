package metadata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// applier turns registry events into snapshots. It keeps a mirror of every
// key it has seen (value and version) and the active version it applied for
// each versioned node. It is used by one goroutine at a time.
type applier struct {
	repo   registry.Repository
	log    *slog.Logger
	mirror map[string]registry.KV
	active map[string]int // versioned node -> applied active version
	// hidden are the databases a followed DROP announcement took out of
	// the snapshot: their keys are mirrored but not applied until the
	// announcement's end is followed (see databaseListener).
	hidden   map[string]bool
	problems func(error)
	// ahead are the tables of the batch being applied decoded ahead
	// (decodeTablesAhead), by node key; nil between batches.
	ahead map[string]decodedTable
}

func newApplier(repo registry.Repository, log *slog.Logger, problems func(error)) *applier {
	return &applier{repo: repo, log: log, mirror: map[string]registry.KV{}, active: map[string]int{}, hidden: map[string]bool{}, problems: problems}
}

// draft is the next snapshot under construction: maps are copied the first
// time a batch changes them, so a batch of n events costs O(n) plus one copy
// of each touched map.
type draft struct {
	s       *Snapshot
	dbs     map[string]bool // databases already copied in this batch
	schemas map[string]bool // "db/schema" already copied
	states  bool            // DataSourceStates already copied
	// rules and fields are the rule contents ("db\x00type") and their
	// fields' maps and lists ("db\x00type\x00field") already copied in
	// this batch: an item applied to them changes them in place, so a
	// batch of n items of a rule costs O(n) plus one copy of each touched
	// content and field, not a copy per item.
	rules   map[string]bool
	fields  map[string]bool
	changes []Change
}

func newDraft(base *Snapshot) *draft {
	s := *base
	s.Databases = maps.Clone(base.Databases)
	return &draft{s: &s, dbs: map[string]bool{}, schemas: map[string]bool{}, rules: map[string]bool{}, fields: map[string]bool{}}
}

// ruleContent returns rule typ of database db (which the draft owns, see
// db) with its content owned by the draft, copied the first time the batch
// touches it; an absent rule gets an empty content (not stored: the caller
// stores the rule once it changed it).
func (d *draft) ruleContent(db *Database, typ string) map[string]any {
	id := db.Name + "\x00" + typ
	r, ok := db.Rules[typ]
	if ok && d.rules[id] && r.Content != nil {
		return r.Content
	}
	content := maps.Clone(r.Content)
	if content == nil {
		content = map[string]any{}
	}
	d.rules[id] = true
	for f := range d.fields {
		if strings.HasPrefix(f, id+"\x00") {
			delete(d.fields, f) // a content new to the batch: none of its fields is copied yet
		}
	}
	return content
}

// editRule applies one item (field f, entry name) to rule typ of database
// db through editRuleItem, with the content and the field owned by the
// draft, and stores the rule, or removes it when its content is left
// empty.
func (d *draft) editRule(db *Database, typ, f, name string, decoded any, del bool) {
	content := d.ruleContent(db, typ)
	_, existed := db.Rules[typ]
	// The digest's sum: out with the entries the item stands for (the
	// whole field when it is not of the item's shape), in with them once
	// changed.
	sum := &db.rulesSum
	partial := name != "" && sum.named(-1, typ, content, f, name)
	if v, ok := content[f]; ok && !partial {
		sum.field(-1, typ, f, v)
	}
	if !existed {
		sum.entry(1, typ, "", 't', "", nil)
	}
	prefix := db.Name + "\x00" + typ + "\x00"
	editRuleItem(typ, content, f, name, decoded, del, func(f string) bool { return d.fields[prefix+f] })
	d.fields[prefix+f] = true
	if partial {
		sum.named(1, typ, content, f, name)
	} else if v, ok := content[f]; ok {
		sum.field(1, typ, f, v)
	}
	if len(content) == 0 {
		sum.entry(-1, typ, "", 't', "", nil)
		delete(db.Rules, typ)
		return
	}
	db.Rules[typ] = config.Rule{Type: typ, Content: content}
}

func (d *draft) db(name string, create bool) *Database {
	cur := d.s.Databases[name]
	if cur == nil {
		if !create {
			return nil
		}
		cur = &Database{Name: name, Units: map[string]config.DataSource{}, Rules: map[string]config.Rule{}, Schemas: map[string]*Schema{}, summed: true}
		d.s.Databases[name] = cur
		d.dbs[name] = true
		d.changes = append(d.changes, Change{Kind: paths.KindDatabase, Database: name})
		return cur
	}
	if !d.dbs[name] {
		c := *cur
		c.Units = maps.Clone(cur.Units)
		c.Rules = maps.Clone(cur.Rules)
		c.Schemas = maps.Clone(cur.Schemas)
		cur = &c
		d.s.Databases[name] = cur
		d.dbs[name] = true
	}
	return cur
}

func (d *draft) schema(db, name string, create bool) *Schema {
	dbv := d.db(db, create)
	if dbv == nil {
		return nil
	}
	cur := dbv.Schemas[name]
	id := db + "/" + name
	if cur == nil {
		if !create {
			return nil
		}
		cur = &Schema{Name: name, Tables: map[string]datasource.Table{}, Views: map[string]datasource.View{}}
		dbv.Schemas[name] = cur
		d.schemas[id] = true
		d.changes = append(d.changes, Change{Kind: paths.KindSchema, Database: db, Schema: name})
		return cur
	}
	if !d.schemas[id] {
		c := *cur
		c.Tables = maps.Clone(cur.Tables)
		c.Views = maps.Clone(cur.Views)
		cur = &c
		dbv.Schemas[name] = cur
		d.schemas[id] = true
	}
	return cur
}

// apply applies a batch of events in order. live says the events come from
// a running watch (content missing from the mirror is then read from the
// registry). ctx bounds those reads.
func (a *applier) apply(ctx context.Context, d *draft, events []registry.Event, live bool) {
	for _, ev := range events {
		switch ev.Type {
		case registry.EventPut:
			a.mirror[ev.KV.Key] = ev.KV
		case registry.EventDelete:
			delete(a.mirror, ev.KV.Key)
		}
	}
	a.ahead = a.decodeTablesAhead(events)
	defer func() { a.ahead = nil }()
	for _, ev := range events {
		if ev.Err != nil {
			continue
		}
		a.route(ctx, d, ev, live)
	}
}

func (a *applier) problem(key string, err error) {
	err = fmt.Errorf("%s: %w (skipped)", key, err)
	a.log.Warn("metadata: corrupt value in the registry", "key", key, "err", err)
	if a.problems != nil {
		a.problems(err)
	}
}

func (a *applier) route(ctx context.Context, d *draft, ev registry.Event, live bool) {
	key := ev.KV.Key
	if db, group, unit, isQDS, ok := paths.ParseQualifiedDataSource(key); isQDS {
		a.dataSourceState(d, ev, QualifiedDataSource{db, group, unit}, ok)
		return
	}
	k, ok := paths.ParseKey(key)
	if !ok {
		return
	}
	del := ev.Type == registry.EventDelete
	if k.Kind != paths.KindDatabaseListener && k.Database != "" && (a.hidden[k.Database] || a.dropAnnounced(k.Database)) {
		return // being dropped: followed again when the announcement goes
	}
	switch k.Kind {
	case paths.KindDatabaseListener:
		a.databaseListener(ctx, d, k.Database, live)
		return
	case paths.KindClusterState:
		state := strings.TrimSpace(string(ev.KV.Value))
		switch state {
		case "", "OK", "READ_ONLY", "UNAVAILABLE":
		default:
			a.problem(key, fmt.Errorf("unknown cluster state %q", state))
			return
		}
		if state == "" || del {
			state = "OK"
		}
		d.s.ClusterState = state
		d.changes = append(d.changes, Change{Kind: k.Kind, Deleted: del})
		return
	case paths.KindDatabase:
		if del {
			if _, ok := d.s.Databases[k.Database]; ok {
				delete(d.s.Databases, k.Database)
				a.forget(k.Node)
				d.changes = append(d.changes, Change{Kind: k.Kind, Database: k.Database, Deleted: true})
			}
			return
		}
		d.db(k.Database, true)
		return
	case paths.KindSchema:
		if del {
			if db := d.db(k.Database, false); db != nil && db.Schemas[k.Schema] != nil {
				delete(db.Schemas, k.Schema)
				a.forget(k.Node)
				d.changes = append(d.changes, Change{Kind: k.Kind, Database: k.Database, Schema: k.Schema, Deleted: true})
			}
			return
		}
		d.schema(k.Database, k.Schema, true)
		return
	case paths.KindRuleType:
		if del {
			if db := d.db(k.Database, false); db != nil {
				if r, ok := db.Rules[k.RuleType]; ok {
					db.rulesSum.add(k.RuleType, r.Content, -1)
					delete(db.Rules, k.RuleType)
					a.forget(k.Node)
					d.changes = append(d.changes, Change{Kind: k.Kind, Database: k.Database, RuleType: k.RuleType, Deleted: true})
				}
			}
		}
		return
	}
	// Versioned items.
	switch {
	case k.Leaf == paths.VersionsName && !del:
		// Content may arrive after its active_version (ZooKeeper re-arms
		// watches per node): apply it if it is the active one.
		av, ok := a.mirror[paths.ActiveVersion(k.Node)]
		if !ok || strings.TrimSpace(string(av.Value)) != strconv.Itoa(k.Version) {
			return
		}
		if v, ok := a.active[k.Node]; ok && v == k.Version && live {
			// The active version rewritten in place: ShardingSphere's
			// plain puts do that when two nodes persist the same node
			// at once, or with two versions listed on etcd.
			if err := a.set(d, k, ev.KV.Value); err != nil {
				a.problem(key, err)
			}
			return
		}
		a.activate(ctx, d, k, av.Value, live)
	case k.Leaf == paths.ActiveVersionName && !del:
		if cur, ok := a.mirror[key]; !ok || string(cur.Value) != string(ev.KV.Value) {
			a.log.Debug("metadata: invalid active version", "key", key, "value", string(ev.KV.Value))
			return
		}
		a.activate(ctx, d, k, ev.KV.Value, live)
	case del && (k.Leaf == paths.ActiveVersionName || k.Leaf == ""):
		if _, ok := a.active[k.Node]; !ok && k.Leaf == paths.ActiveVersionName {
			return
		}
		delete(a.active, k.Node)
		a.remove(d, k)
	}
}

// forget drops the applied versions of every node under prefix.
func (a *applier) forget(prefix string) {
	for node := range a.active {
		if registry.IsUnder(node, prefix) {
			delete(a.active, node)
		}
	}
}

func (a *applier) activate(ctx context.Context, d *draft, k paths.Key, value []byte, live bool) {
	n, err := strconv.Atoi(strings.TrimSpace(string(value)))
	if err != nil || n < 0 {
		a.problem(paths.ActiveVersion(k.Node), fmt.Errorf("active_version %q is not a version number", value))
		return
	}
	if v, ok := a.active[k.Node]; ok && v == n {
		return
	}
	vkey := paths.Version(k.Node, n)
	content, ok := a.mirror[vkey]
	if !ok && live {
		kv, err := a.repo.Get(ctx, vkey)
		if err != nil {
			if !errors.Is(err, registry.ErrNotFound) {
				a.log.Warn("metadata: read version", "key", vkey, "err", err)
			}
			return
		}
		content = kv
	} else if !ok {
		return // the version node will come (or the value is corrupt and stays unapplied)
	}
	a.active[k.Node] = n
	if err := a.set(d, k, content.Value); err != nil {
		a.problem(vkey, err)
	} else if k.Kind == paths.KindProps {
		d.s.PropsVersion = n
	}
}

func (a *applier) set(d *draft, k paths.Key, data []byte) error {
	ch := Change{Kind: k.Kind, Database: k.Database, Schema: k.Schema, Name: k.Name, RuleType: k.RuleType, RuleItem: k.RuleItem, ItemName: k.ItemName}
	switch k.Kind {
	case paths.KindTable:
		t, err := a.tableOf(k, data)
		if err != nil {
			return err
		}
		d.schema(k.Database, k.Schema, true).Tables[k.Name] = t
	case paths.KindView:
		v, err := decodeView(k.Name, data)
		if err != nil {
			return err
		}
		d.schema(k.Database, k.Schema, true).Views[k.Name] = v
	case paths.KindUnit:
		ds, err := decodeUnit("unit "+k.Name, data)
		if err != nil {
			return err
		}
		d.db(k.Database, true).Units[k.Name] = ds
	case paths.KindRuleItem:
		f := camel(k.RuleItem)
		decoded, err := decodeRuleItem(k.RuleType, f, k.ItemName, data, false)
		if err != nil {
			return err
		}
		ch.Field = f
		d.editRule(d.db(k.Database, true), k.RuleType, f, k.ItemName, decoded, false)
	case paths.KindGlobalRule:
		r, err := decodeRuleContent(k.Name, data)
		if err != nil {
			return err
		}
		d.s.GlobalRules = maps.Clone(d.s.GlobalRules)
		d.s.GlobalRules[k.Name] = r
	case paths.KindProps:
		p, err := decodeProps(data)
		if err != nil {
			return err
		}
		d.s.Props = p
	default:
		return nil
	}
	d.changes = append(d.changes, ch)
	return nil
}

func (a *applier) remove(d *draft, k paths.Key) {
	ch := Change{Kind: k.Kind, Database: k.Database, Schema: k.Schema, Name: k.Name, RuleType: k.RuleType, RuleItem: k.RuleItem, ItemName: k.ItemName, Deleted: true}
	switch k.Kind {
	case paths.KindTable:
		if s := d.schema(k.Database, k.Schema, false); s != nil {
			delete(s.Tables, k.Name)
		}
	case paths.KindView:
		if s := d.schema(k.Database, k.Schema, false); s != nil {
			delete(s.Views, k.Name)
		}
	case paths.KindUnit:
		if db := d.db(k.Database, false); db != nil {
			delete(db.Units, k.Name)
		}
	case paths.KindRuleItem:
		db := d.db(k.Database, false)
		if db == nil {
			return
		}
		if _, ok := db.Rules[k.RuleType]; !ok {
			return
		}
		if k.ItemName == "" && k.Leaf == "" {
			a.forget(k.Node) // the whole item with its named entries
		}
		if a.restoreOtherPlacement(d, k) {
			return
		}
		ch.Field = camel(k.RuleItem)
		d.editRule(db, k.RuleType, ch.Field, k.ItemName, nil, true)
	case paths.KindGlobalRule:
		d.s.GlobalRules = maps.Clone(d.s.GlobalRules)
		delete(d.s.GlobalRules, k.Name)
	case paths.KindProps:
		d.s.Props = config.Props{}
		d.s.PropsVersion = -1
	default:
		return
	}
	d.changes = append(d.changes, ch)
}

// restoreOtherPlacement applies the rule item k names from its other
// place, when the registry still holds it active there, and reports
// whether it did. A sharding default has two places (Layout552's and the
// later layouts'): a migration between layouts writes one and deletes the
// other in one transaction, whose events may come in any order, and the
// deletion of the old copy must not remove what the new one holds.
func (a *applier) restoreOtherPlacement(d *draft, k paths.Key) bool {
	all, err := paths.RuleItemPlacements(k.Database, k.RuleType, k.RuleItem, k.ItemName)
	if err != nil {
		return false
	}
	for _, node := range all {
		if node == k.Node {
			continue
		}
		n, ok := a.active[node]
		if !ok {
			continue
		}
		vkey := paths.Version(node, n)
		kv, ok := a.mirror[vkey]
		if !ok {
			continue
		}
		other, ok := paths.ParseKey(vkey)
		if !ok {
			continue
		}
		return a.set(d, other, kv.Value) == nil
	}
	return false
}
