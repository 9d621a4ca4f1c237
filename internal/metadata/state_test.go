package metadata

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// loadStore loads and runs a reader Store on repo.
func loadStore(t *testing.T, repo registry.Repository) *Store {
	t.Helper()
	s, err := Load(testenv.Context(t), repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	runStore(t, s)
	return s
}

func waitFor(t *testing.T, s *Store, what string, cond func(*Snapshot) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testenv.Context(t), 10*time.Second)
	defer cancel()
	if _, err := s.Wait(ctx, cond); err != nil {
		t.Fatalf("never saw %s: %v", what, err)
	}
}

func put(t *testing.T, r registry.Repository, key, value string) {
	t.Helper()
	if _, err := r.Put(testenv.Context(t), key, []byte(value)); err != nil {
		t.Fatalf("Put(%s): %v", key, err)
	}
}

// TestDataSourceStatesOnRealRegistries writes qualified data source nodes
// as ShardingSphere's QualifiedDataSourceStatePersistService writes them
// and checks that a node reads them at start and follows every change;
// corrupt values and names are reported and skipped.
func TestDataSourceStatesOnRealRegistries(t *testing.T) {
	for _, b := range realBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			w := b.open(t)
			q1 := QualifiedDataSource{"rw_db", "readwrite_ds", "read_ds_0"}
			q2 := QualifiedDataSource{"rw_db", "readwrite_ds", "read_ds_1"}
			put(t, w, paths.QualifiedDataSourcesRoot+"/"+q1.String(), "state: DISABLED\n")
			s := loadStore(t, another(t, w))
			if got := s.Current().DataSourceStates[q1]; got != StateDisabled {
				t.Fatalf("state at start %q, want DISABLED", got)
			}
			put(t, w, paths.QualifiedDataSourcesRoot+"/"+q2.String(), "state: DISABLED\n")
			waitFor(t, s, "read_ds_1 disabled", func(s *Snapshot) bool { return s.DataSourceStates[q2] == StateDisabled })
			if err := SetDataSourceState(testenv.Context(t), w, q1, StateEnabled); err != nil {
				t.Fatal(err)
			}
			waitFor(t, s, "read_ds_0 enabled", func(s *Snapshot) bool { return s.DataSourceStates[q1] == StateEnabled })
			if got := get(t, w, paths.QualifiedDataSourcesRoot+"/rw_db.readwrite_ds.read_ds_0"); got != "state: ENABLED\n" {
				t.Errorf("written %q, want ShardingSphere's %q", got, "state: ENABLED\n")
			}
			if err := w.Delete(testenv.Context(t), paths.QualifiedDataSourcesRoot+"/"+q2.String()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, s, "read_ds_1 deleted", func(s *Snapshot) bool { _, ok := s.DataSourceStates[q2]; return !ok })

			for key, val := range map[string]string{
				"rw_db.readwrite_ds.bad_state": "state: MAYBE\n",
				"rw_db.readwrite_ds.bad_field": "state: ENABLED\ncolour: red\n",
				"rw_db.readwrite_ds.bad_yaml":  "state: [",
				"rw_db.only_two":               "state: DISABLED\n",
			} {
				put(t, w, paths.QualifiedDataSourcesRoot+"/"+key, val)
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				probs := fmt.Sprint(s.Problems())
				missing := ""
				for _, want := range []string{"bad_state", "bad_field", "bad_yaml", "only_two"} {
					if !strings.Contains(probs, want) {
						missing = want
					}
				}
				if missing == "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("problems %s lack %s", probs, missing)
				}
			}
			if n := len(s.Current().DataSourceStates); n != 1 {
				t.Errorf("states %v: corrupt values were applied", s.Current().DataSourceStates)
			}
			if err := SetDataSourceState(testenv.Context(t), w, QualifiedDataSource{"rw_db", "a.b", "c"}, StateDisabled); !errors.Is(err, registry.ErrBadKey) {
				t.Errorf("a group named a.b: %v, want ErrBadKey", err)
			}
			if err := SetDataSourceState(testenv.Context(t), w, QualifiedDataSource{"rw_db", "../x", "c"}, StateDisabled); !errors.Is(err, registry.ErrBadKey) {
				t.Errorf("a group named ../x: %v, want ErrBadKey", err)
			}
		})
	}
}

func rwSnapshot(states map[QualifiedDataSource]string) *Snapshot {
	s := emptySnapshot()
	s.Databases["rw_db"] = &Database{Name: "rw_db", Rules: map[string]config.Rule{"readwrite_splitting": {Type: "readwrite_splitting", Content: map[string]any{
		"dataSourceGroups": map[string]any{"Readwrite_DS": map[string]any{
			"writeDataSourceName": "write_ds", "readDataSourceNames": []any{"read_ds_0", "read_ds_1"}}},
	}}}}
	s.Databases["plain_db"] = &Database{Name: "plain_db", Rules: map[string]config.Rule{}}
	if states != nil {
		s.DataSourceStates = states
	}
	return s
}

func TestCheckDataSourceStateMakesUpstreamChecks(t *testing.T) {
	disabled := map[QualifiedDataSource]string{{"rw_db", "Readwrite_DS", "read_ds_1"}: StateDisabled}
	for _, c := range []struct {
		db, group, unit string
		enable          bool
		code            uint16
		state           string
		kind            sqlerr.Kind
		msg             string
	}{
		{"nope", "g", "u", false, 0, "44000", sqlerr.NotFound, "Unknown database 'nope'."},
		{"plain_db", "g", "u", false, sqlerr.UnsupportedCode, "0A000", sqlerr.NotFound, "Unsupported SQL operation: The current database has no `class org.apache.shardingsphere.readwritesplitting.rule.ReadwriteSplittingRule` rules."},
		{"rw_db", "other", "u", false, CodeMissingRule, "42S02", sqlerr.NotFound, "Readwrite-splitting rule 'other' do not exist in database 'rw_db'."},
		{"rw_db", "readwrite_ds", "write_ds", false, CodeReadDataSourceNotFound, "44000", sqlerr.NotFound, "Can not find readwrite-splitting READ data source 'write_ds' in database.data_source_rule: 'rw_db'.'Readwrite_DS'."},
		{"rw_db", "readwrite_ds", "read_ds_0", true, CodeInvalidStorageUnitStatus, "44000", sqlerr.Conflict, "Invalid storage unit status, error message is: storage unit is not disabled."},
		{"rw_db", "readwrite_ds", "read_ds_1", false, CodeInvalidStorageUnitStatus, "44000", sqlerr.Conflict, "Invalid storage unit status, error message is: storage unit is already disabled."},
	} {
		_, err := CheckDataSourceState(rwSnapshot(disabled), c.db, c.group, c.unit, c.enable)
		var ce *sqlerr.Error
		if !errors.As(err, &ce) || ce.Code != c.code || ce.SQLState != c.state || ce.Kind != c.kind || ce.Message != c.msg {
			t.Errorf("%s.%s.%s enable=%v: %#v, want code %d state %s kind %d %q", c.db, c.group, c.unit, c.enable, err, c.code, c.state, c.kind, c.msg)
		}
	}
	if _, err := CheckDataSourceState(rwSnapshot(nil), "nope", "g", "u", true); !errors.Is(err, ErrNoDatabase) {
		t.Errorf("unknown database: %v, want ErrNoDatabase", err)
	}
	q, err := CheckDataSourceState(rwSnapshot(disabled), "rw_db", "READWRITE_DS", "read_ds_0", false)
	if err != nil || q != (QualifiedDataSource{"rw_db", "Readwrite_DS", "read_ds_0"}) {
		t.Errorf("disable read_ds_0: %v %v, want the group's configured name", q, err)
	}
	if _, err := CheckDataSourceState(rwSnapshot(disabled), "rw_db", "readwrite_ds", "read_ds_1", true); err != nil {
		t.Errorf("enable the disabled read_ds_1: %v", err)
	}
}

// recordingSession records the ephemeral puts it forwards.
type recordingSession struct {
	registry.Session
	mu      sync.Mutex
	puts    []string       // ephemeral writes, key=value
	commits []registry.Txn // every transaction committed, in order
}

func (r *recordingSession) PutEphemeral(ctx context.Context, key string, value []byte) error {
	r.mu.Lock()
	r.puts = append(r.puts, key+"="+string(value))
	r.mu.Unlock()
	return r.Session.PutEphemeral(ctx, key, value)
}

// Commit records the transactions that commit.
func (r *recordingSession) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	v, err := r.Session.Commit(ctx, txn)
	if err != nil {
		return v, err
	}
	r.mu.Lock()
	r.commits = append(r.commits, txn)
	for _, op := range txn.Ops {
		if op.Ephemeral {
			r.puts = append(r.puts, op.Key+"="+string(op.Value))
		}
	}
	r.mu.Unlock()
	return v, err
}

// TestDatabaseListenerOnRealRegistries creates and drops a database
// through a Coordinator and checks what it announces; then it writes
// announcements as ShardingSphere nodes do (5.5.3's and 5.5.2's paths and
// values, ephemeral) and checks that a node stops following a database
// while DROP stands and follows it again, with what was written meanwhile,
// after CREATE or once the announcement is gone.
func TestDatabaseListenerOnRealRegistries(t *testing.T) {
	for _, b := range realBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := testenv.Context(t)
			w := b.open(t)
			s1 := loadStore(t, another(t, w))
			s2 := loadStore(t, another(t, w))
			sess, err := w.NewSession(ctx, registry.SessionOptions{TTL: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sess.Close(context.Background()) })
			for _, layout := range []paths.Layout{paths.Layout553, paths.Layout552} {
				rec := &recordingSession{Session: sess}
				c := Coordinator{Repo: w, Session: rec, Layout: layout, Hold: 300 * time.Millisecond}
				ds := config.NewDataSource("jdbc:sqlite:/tmp/x.db", "", "")
				created := config.Database{Name: "new_db", DataSources: map[string]config.DataSource{"ds": ds}}
				start := time.Now()
				if err := c.CreateDatabase(ctx, created); err != nil {
					t.Fatal(err)
				}
				if held := time.Since(start); held < c.Hold {
					t.Errorf("%v: CreateDatabase returned after %v, before its hold of %v", layout, held, c.Hold)
				}
				// One transaction: every key of the database and the
				// announcement (see Announce).
				kvs, err := DatabaseWrites(layout, created)
				if err != nil {
					t.Fatal(err)
				}
				if len(rec.commits) != 1 || len(rec.commits[0].Ops) != len(kvs)+1 {
					t.Errorf("%v: CreateDatabase committed %d transactions %+v, want one with the %d keys of the database and the announcement", layout, len(rec.commits), rec.commits, len(kvs))
				}
				for _, s := range []*Store{s1, s2} {
					waitFor(t, s, "new_db", func(s *Snapshot) bool { db := s.Databases["new_db"]; return db != nil && len(db.Units) == 1 })
				}
				if err := c.CreateDatabase(ctx, config.Database{Name: "new_db"}); !errors.Is(err, registry.ErrExists) {
					t.Errorf("second create: %v, want ErrExists", err)
				}
				if err := c.DropDatabase(ctx, "new_db"); err != nil {
					t.Fatal(err)
				}
				for _, s := range []*Store{s1, s2} {
					waitFor(t, s, "new_db dropped", func(s *Snapshot) bool { return s.Databases["new_db"] == nil })
				}
				if err := c.DropDatabase(ctx, "new_db"); !errors.Is(err, ErrNoDatabase) {
					t.Errorf("second drop: %v, want ErrNoDatabase", err)
				}
				key, _ := layout.DatabaseListener("new_db")
				want := []string{key + "=" + layout.ListenerValue(true), key + "=" + layout.ListenerValue(false)}
				if fmt.Sprint(rec.puts) != fmt.Sprint(want) {
					t.Errorf("%v announced %v, want %v", layout, rec.puts, want)
				}
				if _, err := w.Get(ctx, key); !errors.Is(err, registry.ErrNotFound) {
					t.Errorf("the announcement %s is left: %v", key, err)
				}
			}

			// Announcements written by ShardingSphere nodes.
			put(t, w, "/metadata/up_db", "")
			putVersion := func(unit string) {
				node := "/metadata/up_db/data_sources/units/" + unit
				put(t, w, node+"/versions/0", "url: jdbc:mysql://127.0.0.1:3306/"+unit+"\nusername: root\n")
				put(t, w, node+"/active_version", "0")
			}
			putVersion("ds_0")
			waitFor(t, s1, "up_db", func(s *Snapshot) bool { db := s.Databases["up_db"]; return db != nil && len(db.Units) == 1 })
			for _, c := range []struct {
				key, drop, create string
			}{
				{"/states/database_listener_coordinator/up_db", "DROP", "CREATE"},
				{"/states/listener_assisted/up_db", "DROP_DATABASE", "CREATE_DATABASE"},
			} {
				if err := sess.PutEphemeral(ctx, c.key, []byte(c.drop)); err != nil {
					t.Fatal(err)
				}
				waitFor(t, s1, c.drop+" followed", func(s *Snapshot) bool { return s.Databases["up_db"] == nil })
				putVersion("ds_1") // written while DROP stands: ignored, then picked up
				if err := sess.PutEphemeral(ctx, c.key, []byte(c.create)); err != nil {
					t.Fatal(err)
				}
				waitFor(t, s1, c.create+" followed", func(s *Snapshot) bool { db := s.Databases["up_db"]; return db != nil && len(db.Units) == 2 })
				if err := sess.PutEphemeral(ctx, c.key, []byte(c.drop)); err != nil {
					t.Fatal(err)
				}
				waitFor(t, s1, c.drop+" again", func(s *Snapshot) bool { return s.Databases["up_db"] == nil })
				if err := w.Delete(ctx, c.key); err != nil {
					t.Fatal(err)
				}
				waitFor(t, s1, "up_db back once the announcement is gone", func(s *Snapshot) bool { db := s.Databases["up_db"]; return db != nil && len(db.Units) == 2 })
				if err := w.Delete(ctx, "/metadata/up_db/data_sources/units/ds_1"); err != nil {
					t.Fatal(err)
				}
			}
			put(t, w, "/states/database_listener_coordinator/up_db", "MAYBE")
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(fmt.Sprint(s1.Problems()), "database_listener_coordinator/up_db"); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("problems %v lack the corrupt announcement", s1.Problems())
				}
			}
			if s1.Current().Databases["up_db"] == nil {
				t.Error("a corrupt announcement hid the database")
			}
		})
	}
}

func TestParseAnnouncement(t *testing.T) {
	for in, want := range map[string]string{
		"CREATE": "CREATE", "DROP": "DROP", "CREATE_DATABASE": "CREATE", "DROP_DATABASE": "DROP", " DROP\n": "DROP",
		"databaseName: foo_db\nlistenerAssistedType: DROP_DATABASE\n":   "DROP",
		"listenerAssistedType: CREATE_DATABASE\ndatabaseName: foo_db\n": "CREATE",
	} {
		if got, err := parseAnnouncement([]byte(in)); err != nil || got != want {
			t.Errorf("parseAnnouncement(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "create", "MAYBE", "listenerAssistedType: ALTER"} {
		if got, err := parseAnnouncement([]byte(in)); err == nil {
			t.Errorf("parseAnnouncement(%q) = %q, want an error", in, got)
		}
	}
}
