//go:build linux

package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/shardkeeper/shardkeeper/keyclient"
)

// latency is the result of one open-loop run.
type latency struct {
	Proto    string  // resp or udp
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
	// generator's own lateness); for a retried UDP request, from its
	// first send.
	P99Sent float64
	// P99Lag is the 99th percentile of how late the generator sent a
	// request after its scheduled time (ms): the generator's own share.
	P99Lag float64
	// Busy is the share of the machine's CPU time (all CPUs, every
	// process) that was busy during the run, in percent.
	Busy float64
	// Retries counts UDP datagrams sent again because their request had
	// no reply within the retry timeout. A retried request counts once,
	// with its latency from its scheduled time to the first reply to any
	// of its tries.
	Retries int
	// Lost counts UDP requests still unanswered when the generator gave
	// up (the drain time after the last scheduled send); each counts in
	// the percentiles with the time it waited, a lower bound.
	Lost int
}

func (l latency) String() string {
	s := fmt.Sprintf("%.0f req/s asked, %.0f done, %d errors, p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f max %.3f ms, send lag p99 %.3f max %.3f ms, p99 from the actual send %.3f ms, machine CPU %.0f%% busy",
		l.Rate, l.Achieved, l.Errors, l.P50, l.P90, l.P99, l.P999, l.Max, l.P99Lag, l.MaxLag, l.P99Sent, l.Busy)
	if l.Proto == "udp" {
		s += fmt.Sprintf(", %d retries, %d lost", l.Retries, l.Lost)
	}
	return s
}

// openLoop runs the generator in a child process (so it does not share a
// Go runtime with the node under test) against addr: INCR over RESP, or
// one-key datagram requests over UDP (proto "udp"). flags go to the
// generator as they are (-runs).
func openLoop(proto, addr string, rate float64, d time.Duration, flags ...string) (latency, error) {
	exe, err := os.Executable()
	if err != nil {
		return latency{}, err
	}
	args := append([]string{"openloop", "-proto", proto, "-addr", addr, "-rate", strconv.FormatFloat(rate, 'f', 0, 64), "-d", d.String()}, flags...)
	cmd := exec.Command(exe, args...)
	// Enough Ps that a sender returning from nanosleep never waits for a
	// reader to be preempted (Go preempts every 10 ms): the OS scheduler
	// alone arbitrates the generator's threads. Measured: with
	// GOMAXPROCS=2 the generator itself added ~10 ms to the p99 of Redis
	// and of the node alike.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=8")
	busy0, total0 := cpuTimes()
	out, err := cmd.Output()
	if err != nil {
		return latency{}, fmt.Errorf("open-loop generator against %s %s: %v\n%s", proto, addr, err, out)
	}
	busy1, total1 := cpuTimes()
	var l latency
	if err := json.Unmarshal(out, &l); err != nil {
		return latency{}, fmt.Errorf("open-loop generator: %v: %s", err, out)
	}
	if total1 > total0 {
		l.Busy = 100 * float64(busy1-busy0) / float64(total1-total0)
	}
	return l, nil
}

// cpuTimes returns the busy and total CPU time of the machine (all CPUs)
// from /proc/stat, in clock ticks; zeros where it cannot be read.
func cpuTimes() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// openLoopConfig is one open-loop run.
type openLoopConfig struct {
	proto string // resp (TCP) or udp
	addr  string
	rate  float64 // requests per second, over all connections
	d     time.Duration
	conns int
	tick  time.Duration
	warm  time.Duration
	// retryAfter is how long a UDP request waits for its reply before it
	// is sent again with the same id (the same 20 ms as keybench load and
	// keyclient.UDP), and again after each further retryAfter.
	retryAfter time.Duration
	// drain is how long after the last scheduled send unanswered UDP
	// requests are still retried before they count as lost.
	drain time.Duration
	// runs sends the UDP requests due at one time as one run
	// (UDP_SEGMENT) and takes runs of replies (UDP_GRO) apart.
	runs bool
}

// openLoopMain sends requests at a fixed rate over a few connections, each
// request at its scheduled time whatever the replies do (open loop: a slow
// reply does not delay the next request), and measures every latency from
// the scheduled time, so queueing is counted (no coordinated omission).
// Senders sleep with nanosleep on their own OS threads: the Go timer would
// round sub-millisecond waits up to a millisecond.
//
//	-proto resp  TCP, "INCR counter" in RESP, pipelined on each connection
//	-proto udp   UDP, one 16-byte request datagram per key and one reply
//	             each (internal/keyserver); many requests in flight per
//	             socket, matched by id; a request unanswered for 20 ms is
//	             sent again with the same id (counted as a retry) and
//	             counts with its full latency
func openLoopMain(args []string) {
	fs := flag.NewFlagSet("openloop", flag.ExitOnError)
	var cfg openLoopConfig
	fs.StringVar(&cfg.proto, "proto", "resp", "resp (TCP, INCR) or udp (one key per datagram)")
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:6379", "server host:port")
	fs.Float64Var(&cfg.rate, "rate", 10000, "requests per second")
	fs.DurationVar(&cfg.d, "d", 5*time.Second, "how long to send")
	fs.IntVar(&cfg.conns, "conns", 2, "connections or sockets (one sender thread and one reader each)")
	fs.DurationVar(&cfg.tick, "tick", 200*time.Microsecond, "a sender wakes at most this often and sends everything due (its lateness counts in the latency)")
	fs.DurationVar(&cfg.warm, "warmup", 500*time.Millisecond, "excluded from the figures")
	fs.DurationVar(&cfg.retryAfter, "retry", 20*time.Millisecond, "udp: send a request again after this long without a reply")
	fs.DurationVar(&cfg.drain, "drain", time.Second, "udp: keep retrying unanswered requests this long after the last scheduled send")
	fs.BoolVar(&cfg.runs, "runs", false, "udp: send the requests due at one time as one run of datagrams (UDP_SEGMENT) and receive runs of replies (UDP_GRO)")
	_ = fs.Parse(args)
	l, err := runOpenLoop(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "openloop:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(l)
}

// connResult is what one connection of an open-loop run measured.
type connResult struct {
	lat, latSent []time.Duration
	errs         int
	retries      int
	lost         int
	maxLag       time.Duration
	first, final time.Time
}

// schedule is the fixed send schedule of one connection: requests at
// first, first+interval, ... before end.
type schedule struct {
	start, end, warmEnd time.Time
	first               time.Time
	interval            time.Duration
	tick                time.Duration
}

// count is how many requests the schedule sends.
func (s schedule) count() int {
	if !s.first.Before(s.end) {
		return 0
	}
	return int((s.end.Sub(s.first) + s.interval - 1) / s.interval)
}

// wait sleeps until next is due, but not sooner than tick after lastWake,
// and returns the time it woke.
func (s schedule) wait(next, lastWake time.Time) time.Time {
	now := time.Now()
	if w := max(next.Sub(now), s.tick-now.Sub(lastWake)); w > 0 {
		ts := syscall.NsecToTimespec(int64(w))
		_ = syscall.Nanosleep(&ts, nil)
		now = time.Now()
	}
	return now
}

func runOpenLoop(cfg openLoopConfig) (latency, error) {
	if cfg.proto != "resp" && cfg.proto != "udp" {
		return latency{}, fmt.Errorf("unknown -proto %q (resp or udp)", cfg.proto)
	}
	if cfg.rate <= 0 || cfg.conns < 1 {
		return latency{}, fmt.Errorf("-rate %v and -conns %d must be positive", cfg.rate, cfg.conns)
	}
	if cfg.retryAfter <= 0 {
		cfg.retryAfter = 20 * time.Millisecond
	}
	interval := time.Duration(float64(time.Second) * float64(cfg.conns) / cfg.rate)
	start := time.Now().Add(50 * time.Millisecond)
	end := start.Add(cfg.warm + cfg.d)
	results := make([]connResult, cfg.conns)
	conns := make([]net.Conn, 0, cfg.conns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range cfg.conns {
		network := "tcp"
		if cfg.proto == "udp" {
			network = "udp"
		}
		c, err := net.Dial(network, cfg.addr)
		if err != nil {
			return latency{}, err
		}
		conns = append(conns, c)
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		s := schedule{start: start, end: end, warmEnd: start.Add(cfg.warm), interval: interval, tick: cfg.tick,
			first: start.Add(time.Duration(i) * interval / time.Duration(cfg.conns))}
		if cfg.proto != "udp" {
			openLoopRESP(&wg, c, s, &results[i])
			continue
		}
		if err := openLoopUDP(&wg, c, uint64(i), s, cfg, &results[i]); err != nil {
			wg.Wait()
			return latency{}, err
		}
	}
	wg.Wait()

	var all, allSent, allLag []time.Duration
	l := latency{Proto: cfg.proto, Rate: cfg.rate}
	first, final := end, start
	for _, r := range results {
		all = append(all, r.lat...)
		allSent = append(allSent, r.latSent...)
		for i := range min(len(r.lat), len(r.latSent)) {
			allLag = append(allLag, r.lat[i]-r.latSent[i]) // sent - scheduled
		}
		l.Errors += r.errs
		l.Retries += r.retries
		l.Lost += r.lost
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
	slices.Sort(allLag)
	l.Count = len(all)
	if len(all) > 0 {
		q := func(p float64) float64 { return ms(all[min(len(all)-1, int(p*float64(len(all))))]) }
		l.P50, l.P90, l.P99, l.P999, l.Max = q(0.50), q(0.90), q(0.99), q(0.999), ms(all[len(all)-1])
		l.Achieved = float64(len(all)-l.Lost) / final.Sub(first).Seconds()
		l.P99Sent = ms(allSent[min(len(allSent)-1, int(0.99*float64(len(allSent))))])
		if len(allLag) > 0 {
			l.P99Lag = ms(allLag[min(len(allLag)-1, int(0.99*float64(len(allLag))))])
		}
	}
	return l, nil
}

// openLoopRESP pipelines INCR on c on schedule s: a sender thread writes
// each request when due, a reader takes the replies in order.
func openLoopRESP(wg *sync.WaitGroup, c net.Conn, s schedule, res *connResult) {
	type stamp struct{ sched, sent time.Time }
	sched := make(chan stamp, 1<<20)
	wg.Add(2)
	go func() { // sender
		defer wg.Done()
		runtime.LockOSThread()
		w := bufio.NewWriterSize(c, 64<<10)
		cmd := []byte("*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n")
		next := s.first
		var maxLag time.Duration
		var lastWake time.Time
		for next.Before(s.end) {
			now := s.wait(next, lastWake)
			lastWake = now
			// Send everything that is due.
			for !next.After(now) && next.Before(s.end) {
				_, _ = w.Write(cmd)
				sched <- stamp{next, now}
				if lag := now.Sub(next); lag > maxLag && next.After(s.warmEnd) {
					maxLag = lag
				}
				next = next.Add(s.interval)
			}
			if err := w.Flush(); err != nil {
				break
			}
		}
		res.maxLag = maxLag
		close(sched)
	}()
	go func() { // receiver
		defer wg.Done()
		r := bufio.NewReaderSize(c, 64<<10)
		res.lat = make([]time.Duration, 0, s.count()+1024)
		res.latSent = make([]time.Duration, 0, s.count()+1024)
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
			if t.Before(s.warmEnd) {
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

// udpSlot is one scheduled UDP request: the sender fills in its times
// before it sends the datagram, the reader marks it answered.
type udpSlot struct {
	sched, sent atomic.Int64 // ns since the schedule's start
	done        atomic.Bool
}

// udpMaxBackoff caps the doubling of the retry timeout: a request is sent
// again after 20, 40, 80, ..., 640, 640, ... ms (keyclient.UDP
// doubles the same way), so that a stall of the server does not turn
// every request in flight into a flood of retries every 20 ms.
const udpMaxBackoff = 5

// mmsgBatch is the most datagrams one sendmmsg or recvmmsg moves.
const mmsgBatch = 64

// udpSender sends request datagrams, each for one key, collecting the
// ones due at one wake into sendmmsg calls of up to mmsgBatch datagrams
// (as the RESP sender writes what is due with one write).
type udpSender struct {
	fd   int
	n    int
	hdrs [mmsgBatch]unix.Mmsghdr
	iov  [mmsgBatch]unix.Iovec
	bufs [mmsgBatch][16]byte
	errs int
	// gso sends the datagrams of one flush with one sendmsg and
	// UDP_SEGMENT: the kernel splits them into 16-byte datagrams.
	gso bool
	oob []byte
}

func (u *udpSender) add(id uint64) {
	if u.n == mmsgBatch {
		u.flush()
	}
	b := u.bufs[u.n][:]
	copy(b, keyclient.UDPRequestMagic)
	binary.BigEndian.PutUint64(b[4:12], id)
	binary.BigEndian.PutUint32(b[12:16], 1)
	u.n++
}

func (u *udpSender) flush() {
	if u.gso && u.n > 1 {
		if u.oob == nil {
			u.oob = appendSegmentControl(nil, 16)
		}
		b := unsafe.Slice(&u.bufs[0][0], 16*u.n)
		for {
			_, err := unix.SendmsgN(u.fd, b, u.oob, nil, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				u.errs++
			}
			break
		}
		u.n = 0
		return
	}
	for i := range u.n {
		u.iov[i].Base = &u.bufs[i][0]
		u.iov[i].SetLen(16)
		u.hdrs[i] = unix.Mmsghdr{}
		u.hdrs[i].Hdr.Iov = &u.iov[i]
		u.hdrs[i].Hdr.SetIovlen(1)
	}
	for sent := 0; sent < u.n; {
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(u.fd), uintptr(unsafe.Pointer(&u.hdrs[sent])), uintptr(u.n-sent), 0, 0, 0)
		switch errno {
		case 0:
			sent += int(r)
		case unix.EINTR:
		default:
			// This datagram is not sent (e.g. ECONNREFUSED reported
			// from an earlier one): the retry covers it.
			u.errs++
			sent++
		}
	}
	u.n = 0
}

// udpFlow is one socket's share of a UDP open-loop run: one 16-byte
// request for one key per datagram on schedule s, conn's index in the high
// bits of each id and the request's number in the low 40. Requests due
// are sent with sendmmsg (with cfg.runs: as one run, UDP_SEGMENT); a request without a reply for cfg.retryAfter is
// sent again with the same id (the timeout doubling per retry up to
// udpMaxBackoff); replies are taken with recvmmsg and matched by id. A
// request counts once, timed from its schedule to the first reply to any
// of its tries; after the last scheduled send the flow keeps retrying for
// up to cfg.drain, and what is still unanswered counts as lost, with the
// time it waited.
//
// send runs on one thread and receive on another: the slots they share
// are atomics.
type udpFlow struct {
	fd   int
	conn uint64
	s    schedule
	cfg  openLoopConfig
	res  *connResult

	slots    []udpSlot
	answered atomic.Int64

	// The sender's side.
	out    udpSender
	next   time.Time // the next scheduled request
	seq    int       // requests sent
	queues [udpMaxBackoff + 1][]udpPending

	// The receiver's side.
	hdrs [mmsgBatch]unix.Mmsghdr
	iov  [mmsgBatch]unix.Iovec
	buf  []byte // mmsgBatch slots
	ctl  []byte // with runs: a UDP_GRO control buffer per slot
}

// udpPending is a request in flight and when it is to be sent again.
// Requests in flight are queued by retry level, oldest first: every entry
// of a level waited the same timeout, so each queue stays in deadline
// order.
type udpPending struct {
	seq      int
	deadline time.Time
}

// udpReplySlot is the receive buffer of one reply (a one-key reply is 24
// bytes).
const udpReplySlot = 64

func newUDPFlow(c net.Conn, conn uint64, s schedule, cfg openLoopConfig, res *connResult) (*udpFlow, error) {
	fd, err := rawSocket(c)
	if err != nil {
		return nil, err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	f := &udpFlow{fd: fd, conn: conn, s: s, cfg: cfg, res: res, slots: make([]udpSlot, s.count()),
		out: udpSender{fd: fd, gso: cfg.runs}, next: s.first, buf: make([]byte, mmsgBatch*udpReplySlot)}
	if cfg.runs {
		// Replies that the server sent as a run arrive as one receive
		// of up to 64 KiB.
		if err := unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1); err != nil {
			syscall.Close(fd)
			return nil, fmt.Errorf("UDP_GRO: %w", err)
		}
		f.buf = make([]byte, mmsgBatch*(64<<10))
		f.ctl = make([]byte, mmsgBatch*udpControlSpace)
	}
	res.lat = make([]time.Duration, 0, len(f.slots))
	res.latSent = make([]time.Duration, 0, len(f.slots))
	return f, nil
}

// scheduled reports whether requests are still to be sent on schedule.
func (f *udpFlow) scheduled() bool { return f.next.Before(f.s.end) }

// settled reports whether every request sent so far has its reply.
func (f *udpFlow) settled() bool { return f.answered.Load() >= int64(f.seq) }

// send sends, at now, every scheduled request that is due and every retry
// whose timeout has passed.
func (f *udpFlow) send(now time.Time) {
	for !f.next.After(now) && f.next.Before(f.s.end) {
		f.slots[f.seq].sched.Store(f.since(f.next))
		f.slots[f.seq].sent.Store(f.since(now))
		f.out.add(f.conn<<40 | uint64(f.seq))
		f.queues[0] = append(f.queues[0], udpPending{f.seq, now.Add(f.cfg.retryAfter)})
		if lag := now.Sub(f.next); lag > f.res.maxLag && f.next.After(f.s.warmEnd) {
			f.res.maxLag = lag
		}
		f.next = f.next.Add(f.s.interval)
		f.seq++
	}
	for level := range f.queues {
		q := f.queues[level]
		k := 0
		for ; k < len(q) && !q[k].deadline.After(now); k++ {
			p := q[k]
			if f.slots[p.seq].done.Load() {
				continue
			}
			f.out.add(f.conn<<40 | uint64(p.seq))
			f.res.retries++
			up := min(level+1, udpMaxBackoff)
			f.queues[up] = append(f.queues[up], udpPending{p.seq, now.Add(f.cfg.retryAfter << up)})
		}
		f.queues[level] = q[k:]
	}
	f.out.flush()
}

// receive waits for the first reply and takes those that have arrived
// with one recvmmsg (runs of replies split into their datagrams), and
// records them. It returns false on an error that ends the flow's
// receiving.
func (f *udpFlow) receive() bool {
	slot := len(f.buf) / mmsgBatch
	for i := range f.hdrs {
		f.iov[i].Base = &f.buf[i*slot]
		f.iov[i].SetLen(slot)
		f.hdrs[i] = unix.Mmsghdr{}
		f.hdrs[i].Hdr.Iov = &f.iov[i]
		f.hdrs[i].Hdr.SetIovlen(1)
		if f.ctl != nil {
			f.hdrs[i].Hdr.Control = &f.ctl[i*udpControlSpace]
			f.hdrs[i].Hdr.SetControllen(udpControlSpace)
		}
	}
	r, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(f.fd), uintptr(unsafe.Pointer(&f.hdrs[0])), mmsgBatch, unix.MSG_WAITFORONE, 0, 0)
	switch errno {
	case 0:
	case unix.EAGAIN, unix.EINTR:
		return true // nothing yet, or the receive timeout
	case unix.ECONNREFUSED:
		f.res.errs++ // nothing listened for a moment: the retries cover it
		return true
	default:
		f.res.errs++
		return false
	}
	// Every datagram of the batch had arrived by now: their latencies are
	// measured up to the end of the receive.
	now := time.Now()
	for i := range int(r) {
		d := f.buf[i*slot : i*slot+min(int(f.hdrs[i].Len), slot)]
		seg := len(d)
		if f.ctl != nil {
			if g := segmentSize(f.ctl[i*udpControlSpace:][:f.hdrs[i].Hdr.Controllen]); g > 0 {
				seg = g
			}
		}
		for len(d) > 0 {
			k := min(seg, len(d))
			f.record(d[:k], now)
			d = d[k:]
		}
	}
	return true
}

// record checks one reply datagram b received at now and records its
// request's latency.
func (f *udpFlow) record(b []byte, now time.Time) {
	res := f.res
	if len(b) < 16 || string(b[:4]) != keyclient.UDPReplyMagic {
		res.errs++
		return
	}
	id := binary.BigEndian.Uint64(b[4:12])
	seq := int(id & (1<<40 - 1))
	if id>>40 != f.conn || seq >= len(f.slots) {
		res.errs++
		return
	}
	if binary.BigEndian.Uint32(b[12:16]) != 1 || len(b) != 24 {
		res.errs++ // an error reply: the node did not issue the key
	}
	if !f.slots[seq].done.CompareAndSwap(false, true) {
		return // a second reply to a retried request
	}
	f.answered.Add(1)
	t := f.at(f.slots[seq].sched.Load())
	if t.Before(f.s.warmEnd) {
		return
	}
	if res.first.IsZero() || t.Before(res.first) {
		res.first = t
	}
	res.final = now
	res.lat = append(res.lat, now.Sub(t))
	res.latSent = append(res.latSent, now.Sub(f.at(f.slots[seq].sent.Load())))
}

// udpControlSpace is the control buffer of one UDP_GRO value.
var udpControlSpace = unix.CmsgSpace(4)

// finish closes the socket and counts the requests never answered as
// lost, each with the time it waited until stopped.
func (f *udpFlow) finish(stopped time.Time) {
	syscall.Close(f.fd)
	f.res.errs += f.out.errs
	for i := range f.slots[:f.seq] {
		if t := f.at(f.slots[i].sched.Load()); !f.slots[i].done.Load() && !t.Before(f.s.warmEnd) {
			f.res.lost++
			f.res.lat = append(f.res.lat, stopped.Sub(t))
			f.res.latSent = append(f.res.latSent, stopped.Sub(f.at(f.slots[i].sent.Load())))
		}
	}
}

func (f *udpFlow) since(t time.Time) int64 { return int64(t.Sub(f.s.start)) }
func (f *udpFlow) at(ns int64) time.Time   { return f.s.start.Add(time.Duration(ns)) }

// openLoopUDP runs a udpFlow on c with two threads: a sender that wakes
// at most every cfg.tick (nanosleep) and sends what is due, and a reader
// blocked in recvmmsg.
func openLoopUDP(wg *sync.WaitGroup, c net.Conn, conn uint64, s schedule, cfg openLoopConfig, res *connResult) error {
	f, err := newUDPFlow(c, conn, s, cfg, res)
	if err != nil {
		return err
	}
	// Blocking, with a receive timeout so that the reader notices the end.
	tv := unix.NsecToTimeval(int64(10 * time.Millisecond))
	if err := errors.Join(syscall.SetNonblock(f.fd, false), unix.SetsockoptTimeval(f.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)); err != nil {
		syscall.Close(f.fd)
		return err
	}
	var (
		local   sync.WaitGroup
		stop    atomic.Bool
		stopped time.Time // when the sender gave up
	)
	local.Go(func() { // sender
		runtime.LockOSThread()
		var lastWake time.Time
		for f.scheduled() {
			now := f.s.wait(f.next, lastWake)
			lastWake = now
			f.send(now)
		}
		giveUp := f.s.end.Add(f.cfg.drain)
		for !f.settled() {
			now := f.s.wait(time.Time{}, lastWake)
			lastWake = now
			if now.After(giveUp) {
				break
			}
			f.send(now)
		}
		stopped = time.Now()
		// Replies still to come are late replies to retried requests or
		// to requests given up on: stop the reader.
		stop.Store(true)
	})
	local.Go(func() { // receiver
		runtime.LockOSThread()
		for !stop.Load() && f.receive() {
		}
	})
	// Once both are done, the requests never answered count as lost.
	wg.Go(func() {
		local.Wait()
		f.finish(stopped)
	})
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
