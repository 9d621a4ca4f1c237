package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// latency is the result of one open-loop run.
type latency struct {
	Rate     float64 // requests/s asked for
	Achieved float64 // responses/s received
	Count    int
	Errors   int
	P50      float64 // ms, measured from each request's scheduled time
	P90      float64
	P99      float64
	P999     float64
	Max      float64
	MaxLag   float64 // ms: how late the generator sent its latest request
	// P99Sent is the p99 measured from when each request was actually
	// written (the server's and the network's share, without the
	// generator's own lateness).
	P99Sent float64
}

func (l latency) String() string {
	return fmt.Sprintf("%.0f req/s asked, %.0f done, %d errors, p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f max %.3f ms, send lag max %.3f ms, p99 from the actual send %.3f ms",
		l.Rate, l.Achieved, l.Errors, l.P50, l.P90, l.P99, l.P999, l.Max, l.MaxLag, l.P99Sent)
}

// openLoop runs the generator in a child process (so it does not share a
// Go runtime with the node under test) against addr's INCR.
func openLoop(addr string, rate float64, d time.Duration) (latency, error) {
	exe, err := os.Executable()
	if err != nil {
		return latency{}, err
	}
	cmd := exec.Command(exe, "openloop", "-addr", addr, "-rate", strconv.FormatFloat(rate, 'f', 0, 64), "-d", d.String())
	// Enough Ps that a sender returning from nanosleep never waits for a
	// reader to be preempted (Go preempts every 10 ms): the OS scheduler
	// alone arbitrates the generator's threads. Measured: with
	// GOMAXPROCS=2 the generator itself added ~10 ms to the p99 of Redis
	// and of the node alike.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=8")
	out, err := cmd.Output()
	if err != nil {
		return latency{}, fmt.Errorf("open-loop generator against %s: %v\n%s", addr, err, out)
	}
	var l latency
	if err := json.Unmarshal(out, &l); err != nil {
		return latency{}, fmt.Errorf("open-loop generator: %v: %s", err, out)
	}
	return l, nil
}

// openLoopMain sends INCR at a fixed rate over a few connections, each
// request at its scheduled time whatever the replies do (open loop: a slow
// reply does not delay the next request), and measures every latency from
// the scheduled time, so queueing is counted (no coordinated omission).
// Senders sleep with nanosleep on their own OS threads: the Go timer would
// round sub-millisecond waits up to a millisecond.
func openLoopMain(args []string) {
	fs := flag.NewFlagSet("openloop", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "RESP server")
	rate := fs.Float64("rate", 10000, "requests per second")
	d := fs.Duration("d", 5*time.Second, "how long to send")
	conns := fs.Int("conns", 2, "connections (one sender thread and one reader each)")
	tick := fs.Duration("tick", 200*time.Microsecond, "a sender wakes at most this often and sends everything due (its lateness counts in the latency)")
	warm := fs.Duration("warmup", 500*time.Millisecond, "excluded from the figures")
	_ = fs.Parse(args)

	interval := time.Duration(float64(time.Second) * float64(*conns) / *rate)
	start := time.Now().Add(50 * time.Millisecond)
	end := start.Add(*warm + *d)
	type stamp struct{ sched, sent time.Time }
	type result struct {
		lat, latSent []time.Duration
		errs         int
		maxLag       time.Duration
		first, final time.Time
	}
	results := make([]result, *conns)
	var wg sync.WaitGroup
	for i := range *conns {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		sched := make(chan stamp, 1<<20)
		offset := time.Duration(i) * interval / time.Duration(*conns)
		wg.Add(2)
		go func() { // sender
			defer wg.Done()
			runtime.LockOSThread()
			w := bufio.NewWriterSize(c, 64<<10)
			cmd := []byte("*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n")
			next := start.Add(offset)
			var maxLag time.Duration
			var lastWake time.Time
			for next.Before(end) {
				now := time.Now()
				if wait := max(next.Sub(now), *tick-now.Sub(lastWake)); wait > 0 {
					ts := syscall.NsecToTimespec(int64(wait))
					_ = syscall.Nanosleep(&ts, nil)
					now = time.Now()
				}
				lastWake = now
				// Send everything that is due.
				for !next.After(now) && next.Before(end) {
					_, _ = w.Write(cmd)
					sched <- stamp{next, now}
					if lag := now.Sub(next); lag > maxLag && next.After(start.Add(*warm)) {
						maxLag = lag
					}
					next = next.Add(interval)
				}
				if err := w.Flush(); err != nil {
					break
				}
			}
			results[i].maxLag = maxLag
			close(sched)
		}()
		go func() { // receiver
			defer wg.Done()
			defer c.Close()
			r := bufio.NewReaderSize(c, 64<<10)
			res := &results[i]
			res.lat = make([]time.Duration, 0, int(*rate*(*d).Seconds()) / *conns + 1024)
			for st := range sched {
				t := st.sched
				line, err := r.ReadSlice('\n')
				if err != nil {
					res.errs++
					break
				}
				now := time.Now()
				if line[0] != ':' {
					res.errs++
				}
				if t.Before(start.Add(*warm)) {
					continue
				}
				if res.first.IsZero() {
					res.first = t
				}
				res.final = now
				res.lat = append(res.lat, now.Sub(t))
				res.latSent = append(res.latSent, now.Sub(st.sent))
			}
		}()
	}
	wg.Wait()
	var all, allSent []time.Duration
	var l latency
	l.Rate = *rate
	first, final := end, start
	for _, r := range results {
		all = append(all, r.lat...)
		allSent = append(allSent, r.latSent...)
		l.Errors += r.errs
		l.MaxLag = max(l.MaxLag, ms(r.maxLag))
		if !r.first.IsZero() && r.first.Before(first) {
			first = r.first
		}
		if r.final.After(final) {
			final = r.final
		}
	}
	slices.Sort(all)
	slices.Sort(allSent)
	l.Count = len(all)
	if len(all) > 0 {
		q := func(p float64) float64 { return ms(all[min(len(all)-1, int(p*float64(len(all))))]) }
		l.P50, l.P90, l.P99, l.P999, l.Max = q(0.50), q(0.90), q(0.99), q(0.999), ms(all[len(all)-1])
		l.Achieved = float64(len(all)) / final.Sub(first).Seconds()
		l.P99Sent = ms(allSent[min(len(allSent)-1, int(0.99*float64(len(allSent))))])
	}
	_ = json.NewEncoder(os.Stdout).Encode(l)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
