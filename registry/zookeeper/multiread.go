package zookeeper

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// The wire protocol of multiRead (ZooKeeper 3.6+), which go-zookeeper
// v1.0.4 cannot send: one request holding many getData or getChildren
// reads, each a multi header {int32 type; bool done; int32 err} and the
// read's request, ended by a header {-1, true, -1}; the answer holds each
// read's result, or its error code, in the same order and form. The reads
// arm no watch.
const (
	opGetData     = 4  // {ustring path; bool watch}, answer {buffer data; Stat stat}
	opGetChildren = 8  // {ustring path; bool watch}, answer {vector<ustring> children}
	opMultiRead   = 22 // the reads, answered together
	opError       = -1 // a result that is an error: {int32 err}

	// statBytes is the size of a jute Stat: czxid, mzxid, ctime, mtime
	// (int64), version, cversion, aversion (int32), ephemeralOwner
	// (int64), dataLength, numChildren (int32), pzxid (int64).
	statBytes = 68
)

const (
	// multiReadOps bounds the reads of one multiRead request, so that
	// its answer stays far below what a server holds in memory for it.
	multiReadOps = 128
	// multiReadWindow bounds the multiRead requests one bulk read keeps
	// in flight: the server answers each while the client decodes the
	// previous one.
	multiReadWindow = 4
	// bulkMin is the fewest znodes of one level that List reads with
	// multiRead: fewer are read one request each (pipelined), which
	// needs no session of its own.
	bulkMin = window
)

// errMultiRead wraps a failure of a multiRead request as a whole (the
// server has no multiRead, the recursive session failed or answered
// nothing in time): the reads can be made one by one instead.
var errMultiRead = errors.New("multiRead failed")

// codeError is a server's error code answering a request. It wraps
// errRefused and, for the codes the Repo tells apart, the client's error
// of that code (zk.ErrNoNode, zk.ErrNoAuth), so that convert maps it.
type codeError struct{ code int32 }

func (e *codeError) Error() string { return fmt.Sprintf("%v: error code %d", errRefused, e.code) }

func (e *codeError) Unwrap() []error {
	switch e.code {
	case -101:
		return []error{errRefused, zk.ErrNoNode}
	case -102:
		return []error{errRefused, zk.ErrNoAuth}
	}
	return []error{errRefused}
}

// readResult is the answer to one read of a multiRead: the data and Stat
// of a getData (value nil for a null znode; its own copy, so that a value
// kept does not keep the whole answer), the children of a getChildren
// (unsorted), or the read's error (a *codeError).
type readResult struct {
	value    []byte
	stat     zk.Stat
	children []string
	err      error
}

// bulk is one List's use of multiRead: a hold on the Repo's recursive
// session, taken at its first bulk read, after which a sync makes the
// session see every change the server applied before (every write that
// returned before on the Repo's connection). off is set once multiRead
// failed: the List reads the rest one znode at a time.
type bulk struct {
	r    *Repo
	hold *recursiveWatch
	off  bool
}

// close releases the hold, if any.
func (b *bulk) close() {
	if b.hold != nil {
		b.hold.close()
		b.hold = nil
	}
}

// session returns the held session, taking the hold and syncing at the
// first call; nil when multiRead is off (for this List, or for the Repo
// since its server refused it) or the hold or the sync failed.
func (b *bulk) session(ctx context.Context) *recursiveSession {
	if b.off || b.r.noMultiRead.Load() {
		return nil
	}
	if b.hold == nil {
		hold, err := b.r.holdRecursive(ctx)
		if err != nil {
			b.fail(err)
			return nil
		}
		b.hold = hold
		if _, err := hold.s.sync(ctx); err != nil {
			b.fail(err)
			return nil
		}
	}
	return b.hold.s
}

// fail turns multiRead off for this List (see multiReadFailed).
func (b *bulk) fail(err error) {
	b.off = true
	b.r.multiReadFailed("list", err)
}

// multiReadFailed logs that what (a List, a Watch's loading) reads one
// znode a request after multiRead failed with err, and turns multiRead
// off for the Repo when the server does not know it.
func (r *Repo) multiReadFailed(what string, err error) {
	var ce *codeError
	if errors.As(err, &ce) && ce.code == codeUnimplemented {
		r.noMultiRead.Store(true)
	}
	logger{r.cfg.Logger}.Printf("%s: reading znodes one request each: %v", what, err)
}

// readLevel reads the data and children of each of paths into got, as
// readUncached does: with multiRead for a level of bulkMin znodes or
// more (readMany), one request per read otherwise or when multiRead
// fails.
func (r *Repo) readLevel(ctx context.Context, b *bulk, paths []string, wantData bool, got []listed) error {
	if wantData && len(paths) >= bulkMin {
		if s := b.session(ctx); s != nil {
			err := r.readMany(ctx, s, paths, got)
			if !errors.Is(err, errMultiRead) {
				return err
			}
			b.fail(err)
		}
	}
	return pipeline(ctx, len(paths), func(i int) (err error) {
		got[i], err = r.readUncached(paths[i], wantData)
		return err
	})
}

// readMany is readUncached of every one of paths, on s with multiRead: the
// data of each, then the children of those that have any. A znode found
// missing is gone; pzxid is the data read's. A failure of a multiRead
// request as a whole wraps errMultiRead.
func (r *Repo) readMany(ctx context.Context, s *recursiveSession, paths []string, got []listed) error {
	res, err := multiRead(ctx, s, readsOf(opGetData, paths))
	if err != nil {
		return err
	}
	var parents []readOp
	var at []int
	for i, x := range res {
		switch {
		case errors.Is(x.err, zk.ErrNoNode):
			got[i] = listedGone
			continue
		case x.err != nil:
			return x.err
		}
		value, stat := x.value, &x.stat
		if value == nil {
			value, stat = repair(r.conn, paths[i], stat)
		}
		got[i] = listed{value: value, mzxid: stat.Mzxid, pzxid: stat.Pzxid}
		if stat.NumChildren > 0 {
			parents = append(parents, readOp{opGetChildren, paths[i]})
			at = append(at, i)
		}
	}
	if len(parents) == 0 {
		return nil
	}
	res, err = multiRead(ctx, s, parents)
	if err != nil {
		return err
	}
	for j, x := range res {
		i := at[j]
		switch {
		case errors.Is(x.err, zk.ErrNoNode):
			got[i] = listedGone
			continue
		case x.err != nil:
			return x.err
		}
		slices.Sort(x.children)
		got[i].children = x.children
	}
	return nil
}

// readOp is one read of a multiRead: op (opGetData or opGetChildren) of
// the znode path.
type readOp struct {
	op   int32
	path string
}

// readsOf is op of each of paths.
func readsOf(op int32, paths []string) []readOp {
	ops := make([]readOp, len(paths))
	for i, p := range paths {
		ops[i] = readOp{op, p}
	}
	return ops
}

// multiRead makes the reads ops on s, multiReadOps reads a request,
// multiReadWindow requests in flight, and returns their results in order. ctx bounds it (its error is
// returned), and each request waits at most the session's timeout for its
// answer. A failure of a request as a whole (refused, unanswered, an
// answer it cannot decode, the session failed) wraps errMultiRead.
func multiRead(ctx context.Context, s *recursiveSession, ops []readOp) ([]readResult, error) {
	out := make([]readResult, len(ops))
	n := (len(ops) + multiReadOps - 1) / multiReadOps
	err := pipelineWidth(ctx, n, multiReadWindow, func(k int) error {
		from, to := k*multiReadOps, min((k+1)*multiReadOps, len(ops))
		got := s.request(ctx, opMultiRead, encodeReads(ops[from:to]), time.Now().Add(s.timeout))
		body, err := got.body, got.err
		if err == nil {
			err = decodeReads(body, out[from:to])
		}
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("%w: %w", errMultiRead, err)
		}
		return err
	})
	return out, err
}

// encodeReads is the body of a multiRead request making the reads ops,
// arming no watch.
func encodeReads(ops []readOp) []byte {
	size := 9
	for _, o := range ops {
		size += 9 + 4 + len(o.path) + 1
	}
	b := make([]byte, 0, size)
	for _, o := range ops {
		b = appendMultiHeader(b, o.op, false, -1)
		b = appendBuffer(b, []byte(o.path))
		b = append(b, 0) // watch: false
	}
	return appendMultiHeader(b, -1, true, -1)
}

func appendMultiHeader(b []byte, typ int32, done bool, code int32) []byte {
	b = appendInt32(b, typ)
	if done {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return appendInt32(b, code)
}

// decodeReads decodes the body of a multiRead answer into out, one result
// per read, and fails when it does not hold exactly len(out) results of
// the reads' kinds.
func decodeReads(body []byte, out []readResult) error {
	d := decoder{b: body}
	for i := 0; ; i++ {
		typ, done, code := d.int32(), d.bool(), d.int32()
		if d.err != nil {
			return d.err
		}
		if done {
			if i != len(out) {
				return fmt.Errorf("a multiRead answer of %d results for %d reads", i, len(out))
			}
			return nil
		}
		if i == len(out) {
			return fmt.Errorf("a multiRead answer of more results than its %d reads", len(out))
		}
		switch typ {
		case opGetData:
			out[i].value = bytes.Clone(d.buffer()) // nil stays nil: a null znode
			out[i].stat = d.stat()
		case opGetChildren:
			out[i].children = d.strings()
		case opError:
			if c := d.int32(); c != 0 {
				code = c
			}
			out[i].err = &codeError{code}
		default:
			return fmt.Errorf("a multiRead result of type %d", typ)
		}
		if d.err != nil {
			return d.err
		}
	}
}

// decoder reads jute values from b; the first value past its end sets err
// and every later read returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("a multiRead answer cut short: %d bytes wanted, %d left", n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) int32() int32 {
	if v := d.take(4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (d *decoder) int64() int64 {
	if v := d.take(8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (d *decoder) bool() bool {
	v := d.take(1)
	return v != nil && v[0] != 0
}

// buffer returns a jute buffer, nil when it is null (length -1).
func (d *decoder) buffer() []byte {
	n := d.int32()
	if n == -1 {
		return nil
	}
	return d.take(int(n))
}

// strings returns a jute vector of ustrings, nil when it is null or
// empty.
func (d *decoder) strings() []string {
	n := d.int32()
	if n <= 0 {
		return nil
	}
	if int(n) > len(d.b)/4 { // each at least its length
		d.err = fmt.Errorf("a multiRead answer of %d children in %d bytes", n, len(d.b))
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		out = append(out, string(d.buffer()))
	}
	return out
}

func (d *decoder) stat() zk.Stat {
	if len(d.b) < statBytes {
		d.take(statBytes)
		return zk.Stat{}
	}
	return zk.Stat{
		Czxid: d.int64(), Mzxid: d.int64(), Ctime: d.int64(), Mtime: d.int64(),
		Version: d.int32(), Cversion: d.int32(), Aversion: d.int32(),
		EphemeralOwner: d.int64(), DataLength: d.int32(), NumChildren: d.int32(), Pzxid: d.int64(),
	}
}
