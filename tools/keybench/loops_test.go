//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/keyserver"
)

// BenchmarkLoopsVsNet compares, in one run, the key server's hand-written
// Linux loops (IOEpoll: epoll event loops for RESP, a recvmmsg/sendmmsg
// loop on a locked thread for UDP) with the plain net implementation of
// the same protocol (IOGoroutines: a goroutine per connection with
// net.Conn; one goroutine answering one datagram at a time with
// ReadFrom/WriteTo). Each round drives each server with `keybench load`'s
// closed-loop generator (50 sockets, one single-key request each in
// flight) for KEYBENCH_LOOP_SECONDS (default 2) seconds, the two modes
// taking turns (which goes first alternates), for KEYBENCH_LOOP_ROUNDS
// (default 5) rounds; the key source is a counter, so what is compared is the
// servers' I/O. It reports the median requests/s of each and the median
// of the per-round ratios (loops / net). Run it with
//
//	go test ./tools/keybench -run '^$' -bench LoopsVsNet -benchtime 1x
func BenchmarkLoopsVsNet(b *testing.B) {
	rounds, d := 5, 2*time.Second
	if v, err := strconv.Atoi(os.Getenv("KEYBENCH_LOOP_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	if v, err := time.ParseDuration(os.Getenv("KEYBENCH_LOOP_SECONDS") + "s"); err == nil && v > 0 {
		d = v
	}
	for _, proto := range []string{"resp", "udp"} {
		b.Run(proto, func(b *testing.B) {
			var loops, plain, ratios []float64
			for r := range rounds {
				rate := map[keyserver.IO]float64{}
				modes := []keyserver.IO{keyserver.IOEpoll, keyserver.IOGoroutines}
				if r%2 == 1 {
					slices.Reverse(modes) // neither mode always runs first
				}
				for _, io := range modes {
					addr, stop := serveMode(b, proto, io)
					l, err := runLoad(proto, addr, 50, 300*time.Millisecond, d)
					stop()
					if err != nil {
						b.Fatal(err)
					}
					rate[io] = l.Rate
				}
				loops, plain = append(loops, rate[keyserver.IOEpoll]), append(plain, rate[keyserver.IOGoroutines])
				ratios = append(ratios, rate[keyserver.IOEpoll]/rate[keyserver.IOGoroutines])
				fmt.Printf("round %d: %s loops %.0f req/s, net %.0f req/s, ratio %.2f\n", r+1, proto, rate[keyserver.IOEpoll], rate[keyserver.IOGoroutines], ratios[r])
			}
			b.ReportMetric(median(loops), "loops-req/s")
			b.ReportMetric(median(plain), "net-req/s")
			b.ReportMetric(median(ratios), "ratio")
			fmt.Printf("%s: median loops %.0f req/s, net %.0f req/s, median ratio %.2f (per round %s), load average %s\n",
				proto, median(loops), median(plain), median(ratios), fmt.Sprintf("%.2f", ratios), loadAverage())
		})
	}
}

// serveMode serves proto on a loopback port with the I/O mode io and a
// counter as the key source; stop ends it.
func serveMode(b *testing.B, proto string, io keyserver.IO) (addr string, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	switch proto {
	case "resp":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr = ln.Addr().String()
		go func() { done <- keyserver.ServeConfig(ctx, ln, &counter{}, keyserver.Config{IO: io}) }()
	default:
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr = pc.LocalAddr().String()
		go func() { done <- keyserver.ServeUDPConfig(ctx, pc, &counter{}, keyserver.Config{IO: io}) }()
	}
	return addr, func() {
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
