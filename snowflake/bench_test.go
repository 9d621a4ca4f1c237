package snowflake_test

import (
	"context"
	"testing"

	bwmarrin "github.com/bwmarrin/snowflake"
	"github.com/sony/sonyflake"

	"github.com/shardkeeper/shardkeeper/snowflake"
)

// The benchmarks use the system clock, so they are bound by the layout limit
// of 4,096 keys per millisecond (about 244 ns/key). The report with CPU time and
// ratios is go run ./tools/snowflakebench.

func newGenerator(b *testing.B) *snowflake.Generator {
	g, err := snowflake.New(snowflake.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkNextID(b *testing.B) {
	g, ctx := newGenerator(b), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.NextID(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNextIDParallel(b *testing.B) {
	g, ctx := newGenerator(b), context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := g.NextID(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkNextIDs1000(b *testing.B) {
	g, ctx := newGenerator(b), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.NextIDs(ctx, 1000); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "keys/s")
}

func BenchmarkAppendIDs1000(b *testing.B) {
	g, ctx := newGenerator(b), context.Background()
	buf := make([]int64, 0, 1000)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = g.AppendIDs(ctx, buf[:0], 1000); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "keys/s")
}

func BenchmarkBwmarrin(b *testing.B) {
	n, err := bwmarrin.NewNode(1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		n.Generate()
	}
}

func BenchmarkBwmarrinParallel(b *testing.B) {
	n, err := bwmarrin.NewNode(1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Generate()
		}
	})
}

func BenchmarkSonyflake(b *testing.B) {
	sf, err := sonyflake.New(sonyflake.Settings{MachineID: func() (uint16, error) { return 1, nil }})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sf.NextID(); err != nil {
			b.Fatal(err)
		}
	}
}
