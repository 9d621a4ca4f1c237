package main

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestServePostgreSQLFlags: --postgresql off (the default) serves no
// console, a negative --postgresql-max-connections is refused, and the
// console takes the TLS of --tls-cert/--tls-key.
func TestServePostgreSQLFlags(t *testing.T) {
	var hf httpFlags
	ctx := context.Background()
	for _, addr := range []string{"", "off", "OFF"} {
		if c, err := hf.postgreSQLConfig(ctx, addr, 0); c != nil || err != nil {
			t.Fatalf("--postgresql %q: %+v, %v; want no console", addr, c, err)
		}
	}
	if _, err := hf.postgreSQLConfig(ctx, "127.0.0.1:0", -1); err == nil || !strings.Contains(err.Error(), "--postgresql-max-connections") {
		t.Fatalf("--postgresql-max-connections -1: %v", err)
	}
	c, err := hf.postgreSQLConfig(ctx, "127.0.0.1:0", 7)
	if err != nil || c.Addr != "127.0.0.1:0" || c.MaxConnections != 7 || c.TLS != nil {
		t.Fatalf("--postgresql 127.0.0.1:0: %+v, %v", c, err)
	}
	hf.tlsCert = "cert.pem"
	if _, err := hf.postgreSQLConfig(ctx, "127.0.0.1:0", 0); err == nil || !strings.Contains(err.Error(), "--tls-cert and --tls-key go together") {
		t.Fatalf("--tls-cert without --tls-key: %v", err)
	}
}

// TestServePostgreSQL runs serve with --postgresql on the embedded
// registry: pgx reaches the console it prints, SHOW COMPUTE NODE INFO names
// the node, and --postgresql-max-connections 1 refuses a second session
// with 53300.
func TestServePostgreSQL(t *testing.T) {
	dir := embeddedConfDir(t)
	output, stop := startServe(t, "--conf", dir, "--http", "off", "--mysql", "off", "--instance-id", "pg-serve",
		"--postgresql", "127.0.0.1:0", "--postgresql-max-connections", "1")
	defer stop()
	m := regexp.MustCompile(`DistSQL console over the PostgreSQL protocol on (127\.0\.0\.1:\d+) \(psql -h 127\.0\.0\.1 -p \d+ -U USER; TLS false\)`).FindStringSubmatch(output())
	if m == nil {
		t.Fatalf("no --postgresql address in the serve output:\n%s", output())
	}
	ctx := testenv.Context(t)
	conn := "postgres://root@" + m[1] + "/sharding_db?sslmode=disable"
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	// The first column, whatever the layout's columns (5.5.4, the
	// default on an empty registry, has no labels).
	var id any
	rows, err := c.Query(ctx, "SHOW COMPUTE NODE INFO")
	if err == nil && rows.Next() {
		var vals []any
		if vals, err = rows.Values(); err == nil && len(vals) > 0 {
			id = vals[0]
		}
	}
	if rows != nil {
		rows.Close()
	}
	if err != nil || id != "pg-serve" {
		t.Fatalf("SHOW COMPUTE NODE INFO: %v, %v", id, err)
	}
	_, err = pgx.Connect(ctx, conn)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" {
		t.Fatalf("a second session with --postgresql-max-connections 1: %v, want 53300", err)
	}
}
