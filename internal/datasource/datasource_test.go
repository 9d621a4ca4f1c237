package datasource

import (
	"context"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

func TestTranslate(t *testing.T) {
	ds := config.NewDataSource("", "root", "s3cret")
	for _, tc := range []struct{ url, driver, dsn, host string }{
		{"jdbc:mysql://127.0.0.1:3306/demo_ds_0?useSSL=false", "mysql", "root:s3cret@tcp(127.0.0.1:3306)/demo_ds_0?parseTime=true&timeout=30s", "127.0.0.1:3306"},
		{"jdbc:mariadb://db.local/x", "mysql", "root:s3cret@tcp(db.local:3306)/x?parseTime=true&timeout=30s", "db.local:3306"},
		{"jdbc:postgresql://127.0.0.1:5432/demo_ds_0", "pgx", "postgres://root:s3cret@127.0.0.1:5432/demo_ds_0?connect_timeout=30&sslmode=disable", "127.0.0.1:5432"},
		{"jdbc:postgresql://h/d?currentSchema=s&sslmode=require", "pgx", "postgres://root:s3cret@h:5432/d?connect_timeout=30&search_path=s&sslmode=require", "h:5432"},
		{"jdbc:sqlite:/tmp/a.db", "sqlite", "file:/tmp/a.db?_pragma=busy_timeout(30000)", "/tmp/a.db"},
	} {
		ds.URL = tc.url
		got, err := Translate(ds)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if got.Driver != tc.driver || got.DSN != tc.dsn || got.Host != tc.host {
			t.Errorf("%s: %+v, want driver %s dsn %s host %s", tc.url, got, tc.driver, tc.dsn, tc.host)
		}
	}
	ds.URL = "jdbc:oracle:thin:@h:1521:x"
	if _, err := Translate(ds); err == nil || !strings.Contains(err.Error(), "unsupported") {
		t.Errorf("oracle: %v", err)
	}
}

func TestUnreachableNamesUnitAndHostNotPassword(t *testing.T) {
	ds := config.NewDataSource("jdbc:postgresql://127.0.0.1:1/nowhere", "postgres", "hunter2-secret")
	ds.ConnectionTimeout = 2 * time.Second
	_, err := Open(testenv.Context(t), "ds_x", ds)
	if err == nil {
		t.Fatal("Open succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "ds_x") || !strings.Contains(msg, "127.0.0.1:1") || strings.Contains(msg, "hunter2") {
		t.Fatalf("error %q must name the unit and host and hide the password", msg)
	}
	ds.URL = "jdbc:mysql://127.0.0.1:1/nowhere"
	if _, err := Open(testenv.Context(t), "ds_y", ds); err == nil || !strings.Contains(err.Error(), "ds_y (mysql at 127.0.0.1:1") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("mysql: %v", err)
	}
}

// PostgresUnit creates a unique schema with tables in the test PostgreSQL
// database and returns a unit pointing at it and the schema name.
func postgresUnit(t *testing.T) (config.DataSource, *DB, string) {
	t.Helper()
	u, err := url.Parse(testenv.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	ds := config.NewDataSource("jdbc:postgresql://"+u.Host+u.Path, u.User.Username(), pw)
	ds.ConnectionTimeout = 5 * time.Second
	db, err := Open(testenv.Context(t), "pg", ds)
	if err != nil {
		testenv.DatabaseUnreachable(t, "PostgreSQL", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	schema := testenv.Namespace("sk_")
	for _, q := range []string{
		"CREATE SCHEMA " + schema,
		"CREATE TABLE " + schema + ".t_order (order_id bigserial PRIMARY KEY, user_id int NOT NULL, status varchar(32), created timestamptz)",
		"CREATE UNIQUE INDEX idx_user_status ON " + schema + ".t_order (user_id, status)",
		"CREATE TABLE " + schema + ".t_item (order_id bigint, item_id int, note text, PRIMARY KEY (order_id, item_id))",
		"CREATE VIEW " + schema + ".v_order AS SELECT order_id FROM " + schema + ".t_order",
		"CREATE TABLE " + schema + ".t_note (note_id int PRIMARY KEY, order_id bigint, code varchar(16), CONSTRAINT uq_note_code UNIQUE (code), CONSTRAINT fk_note_order FOREIGN KEY (order_id) REFERENCES " + schema + ".t_order (order_id))",
	} {
		if _, err := db.ExecContext(testenv.Context(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	return ds, db, schema
}

func findSchema(t *testing.T, schemas []Schema, name string) Schema {
	t.Helper()
	for _, s := range schemas {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no schema %s", name)
	return Schema{}
}

func TestPostgresCatalog(t *testing.T) {
	_, db, schema := postgresUnit(t)
	schemas, err := Catalog(testenv.Context(t), db)
	if err != nil {
		t.Fatal(err)
	}
	s := findSchema(t, schemas, schema)
	checkOrderTables(t, s, "bigint", "character varying(32)")
	if v := s.Views["v_order"]; !strings.Contains(v.Definition, "order_id") {
		t.Errorf("view = %+v", v)
	}
}

func checkOrderTables(t *testing.T, s Schema, bigint, varchar string) {
	t.Helper()
	o := s.Tables["t_order"]
	if len(o.Columns) != 4 {
		t.Fatalf("t_order = %+v", o)
	}
	id, user, status := o.Columns[0], o.Columns[1], o.Columns[2]
	if id.Name != "order_id" || !id.PrimaryKey || id.Nullable || !id.Generated || id.DataType != -5 || id.TypeName != bigint {
		t.Errorf("order_id = %+v", id)
	}
	if user.Name != "user_id" || user.PrimaryKey || user.Nullable || user.DataType != 4 {
		t.Errorf("user_id = %+v", user)
	}
	if status.Name != "status" || !status.Nullable || status.DataType != 12 || status.TypeName != varchar {
		t.Errorf("status = %+v", status)
	}
	if !reflect.DeepEqual(o.Indexes, []Index{{Name: "idx_user_status", Columns: []string{"user_id", "status"}, Unique: true}}) {
		t.Errorf("indexes = %+v", o.Indexes)
	}
	it := s.Tables["t_item"]
	if len(it.Columns) != 3 || !it.Columns[0].PrimaryKey || !it.Columns[1].PrimaryKey || it.Columns[2].PrimaryKey || it.Columns[0].Generated {
		t.Errorf("t_item = %+v", it)
	}
	checkNoteTable(t, s, "fk_note_order")
}

// checkNoteTable checks t_note's unique constraint (an index) and its
// foreign key to t_order.
func checkNoteTable(t *testing.T, s Schema, fk string) {
	t.Helper()
	n := s.Tables["t_note"]
	if !reflect.DeepEqual(n.Constraints, []Constraint{{Name: fk, ReferencedTable: "t_order"}}) {
		t.Errorf("t_note constraints = %+v", n.Constraints)
	}
	found := false
	for _, i := range n.Indexes {
		found = found || (i.Unique && reflect.DeepEqual(i.Columns, []string{"code"}))
	}
	if !found {
		t.Errorf("t_note indexes = %+v, want a unique index on code", n.Indexes)
	}
}

func mysqlUnit(t *testing.T) (config.DataSource, *DB, string) {
	t.Helper()
	u, err := url.Parse(testenv.MySQLURL())
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	admin := config.NewDataSource("jdbc:mariadb://"+u.Host+u.Path, u.User.Username(), pw)
	admin.ConnectionTimeout = 5 * time.Second
	adb, err := Open(testenv.Context(t), "admin", admin)
	if err != nil {
		testenv.DatabaseUnreachable(t, "MySQL/MariaDB", err)
	}
	defer adb.Close()
	name := testenv.Namespace("sk_")
	if _, err := adb.ExecContext(testenv.Context(t), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if db, err := Open(context.Background(), "admin", admin); err == nil {
			_, _ = db.ExecContext(context.Background(), "DROP DATABASE "+name)
			_ = db.Close()
		}
	})
	ds := admin
	ds.URL = "jdbc:mysql://" + u.Host + "/" + name + "?useSSL=false"
	db, err := Open(testenv.Context(t), "my", ds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for _, q := range []string{
		"CREATE TABLE t_order (order_id bigint AUTO_INCREMENT PRIMARY KEY, user_id int NOT NULL, status varchar(32), created datetime)",
		"CREATE UNIQUE INDEX idx_user_status ON t_order (user_id, status)",
		"CREATE TABLE t_item (order_id bigint, item_id int, note text, PRIMARY KEY (order_id, item_id))",
		"CREATE VIEW v_order AS SELECT order_id FROM t_order",
		"CREATE TABLE t_note (note_id int PRIMARY KEY, order_id bigint, code varchar(16), CONSTRAINT uq_note_code UNIQUE (code), CONSTRAINT fk_note_order FOREIGN KEY (order_id) REFERENCES t_order (order_id))",
	} {
		if _, err := db.ExecContext(testenv.Context(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return ds, db, name
}

func TestMySQLCatalog(t *testing.T) {
	_, db, name := mysqlUnit(t)
	schemas, err := Catalog(testenv.Context(t), db)
	if err != nil {
		t.Fatal(err)
	}
	s := findSchema(t, schemas, name)
	checkOrderTables(t, s, "bigint(20)", "varchar(32)")
	if _, ok := s.Views["v_order"]; !ok {
		t.Error("no view")
	}
}

func sqliteUnit(t *testing.T) config.DataSource {
	t.Helper()
	ds := config.NewDataSource("jdbc:sqlite:"+filepath.Join(t.TempDir(), "x.db"), "", "")
	db, err := Open(testenv.Context(t), "lite", ds)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE t_order (order_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INT NOT NULL, status VARCHAR(32), created DATETIME)",
		"CREATE UNIQUE INDEX idx_user_status ON t_order (user_id, status)",
		"CREATE TABLE t_item (order_id BIGINT, item_id INT, note TEXT, PRIMARY KEY (order_id, item_id))",
		"CREATE VIEW v_order AS SELECT order_id FROM t_order",
		"CREATE TABLE t_note (note_id int PRIMARY KEY, order_id bigint, code varchar(16), CONSTRAINT uq_note_code UNIQUE (code), CONSTRAINT fk_note_order FOREIGN KEY (order_id) REFERENCES t_order (order_id))",
	} {
		if _, err := db.ExecContext(testenv.Context(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return ds
}

func TestSQLiteIntrospect(t *testing.T) {
	ds := sqliteUnit(t)
	schemas, err := Introspect(testenv.Context(t), config.Database{Name: "logic_db", DataSources: map[string]config.DataSource{"lite": ds}})
	if err != nil {
		t.Fatal(err)
	}
	s := findSchema(t, schemas, "logic_db")
	o := s.Tables["t_order"]
	// SQLite's INTEGER PRIMARY KEY is a 4 (INTEGER), not a BIGINT.
	if len(o.Columns) != 4 || o.Columns[0].DataType != 4 || !o.Columns[0].Generated || !o.Columns[0].PrimaryKey || !o.Columns[2].Nullable || o.Columns[1].Nullable {
		t.Errorf("t_order = %+v", o)
	}
	if !reflect.DeepEqual(o.Indexes, []Index{{Name: "idx_user_status", Columns: []string{"user_id", "status"}, Unique: true}}) {
		t.Errorf("indexes = %+v", o.Indexes)
	}
	if it := s.Tables["t_item"]; !it.Columns[0].PrimaryKey || !it.Columns[1].PrimaryKey || it.Columns[0].Generated {
		t.Errorf("t_item = %+v", it)
	}
	checkNoteTable(t, s, "fk_t_note_0")
	if _, ok := s.Views["v_order"]; !ok {
		t.Error("no view")
	}
}
