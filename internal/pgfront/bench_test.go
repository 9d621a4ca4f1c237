package pgfront_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardkeeper/shardkeeper/internal/pgfront"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// BenchmarkRoundTrip measures one statement's round trip through the
// front end (a three-row result from an executor that answers at once)
// next to a real PostgreSQL server's SELECT of three rows, both with pgx
// over loopback in the same run, in the simple and the extended protocol.
// The metric pgfront/postgres is the ratio of their times per statement.
//
//	go test ./internal/pgfront -run '^$' -bench RoundTrip -benchtime 20000x
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	ref, err := pgx.Connect(ctx, testenv.PostgresURL())
	if err != nil {
		testenv.DatabaseUnreachable(b, "PostgreSQL", err)
	}
	defer ref.Close(ctx)
	addr := benchServer(b)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		b.Run(mode.String(), func(b *testing.B) {
			cfg, err := pgx.ParseConfig(dsn(addr, "root", "", ""))
			if err != nil {
				b.Fatal(err)
			}
			cfg.DefaultQueryExecMode = mode
			c, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(ctx)
			run := func(c *pgx.Conn, q string) time.Duration {
				start := time.Now()
				for range b.N {
					rows, err := c.Query(ctx, q, mode)
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for rows.Next() {
						n++
					}
					if rows.Err() != nil || n != 2 && n != 3 {
						b.Fatalf("%s: %d rows, %v", q, n, rows.Err())
					}
				}
				return time.Since(start)
			}
			b.ResetTimer()
			front := run(c, "SHOW THINGS")
			b.StopTimer()
			base := run(ref, "SELECT 'a;b' AS name, -7::int8 AS n UNION ALL SELECT 'c', NULL")
			b.ReportMetric(float64(front.Nanoseconds())/float64(b.N), "pgfront-ns/stmt")
			b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "postgres-ns/stmt")
			b.ReportMetric(float64(front)/float64(base), "pgfront/postgres")
		})
	}
}

func benchServer(b *testing.B) string {
	s, err := pgfront.New(pgfront.Config{Executor: newTestExec(), Logger: discard()})
	if err != nil {
		b.Fatal(err)
	}
	ln := listenLoopback(b)
	go func() { _ = s.Serve(ln) }()
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return ln.Addr().String()
}
