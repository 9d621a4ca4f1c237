package registrytest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

func testKV(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	c := testenv.Context(t)

	_, err := r.Get(c, "/kv/missing")
	wantErr(t, "Get missing", err, registry.ErrNotFound)

	v1 := mustPut(t, r, "/kv/a", "one")
	if v1 == 0 {
		t.Fatal("Put returned version 0")
	}
	kv := mustGet(t, r, "/kv/a")
	if string(kv.Value) != "one" || kv.Version != v1 || kv.Key != "/kv/a" {
		t.Fatalf("Get = %q %q v%d, want /kv/a one v%d", kv.Key, kv.Value, kv.Version, v1)
	}
	v2 := mustPut(t, r, "/kv/a", "two")
	if v2 == v1 {
		t.Fatal("Put did not change the version")
	}
	if got := mustGet(t, r, "/kv/a"); string(got.Value) != "two" || got.Version != v2 {
		t.Fatalf("after overwrite Get = %q v%d, want two v%d", got.Value, got.Version, v2)
	}

	// Empty and binary values round-trip.
	mustPut(t, r, "/kv/empty", "")
	if got := mustGet(t, r, "/kv/empty"); len(got.Value) != 0 {
		t.Fatalf("empty value came back as %q", got.Value)
	}
	bin := string([]byte{0, 1, 0xff, '\n'})
	mustPut(t, r, "/kv/bin", bin)
	if got := mustGet(t, r, "/kv/bin"); string(got.Value) != bin {
		t.Fatalf("binary value came back as %q", got.Value)
	}

	// Create only when absent.
	cv, err := r.Create(c, "/kv/created", []byte("x"))
	if err != nil || cv == 0 {
		t.Fatalf("Create = v%d, %v", cv, err)
	}
	_, err = r.Create(c, "/kv/created", []byte("y"))
	wantErr(t, "Create twice", err, registry.ErrExists)
	if got := mustGet(t, r, "/kv/created"); string(got.Value) != "x" {
		t.Fatalf("second Create overwrote the value: %q", got.Value)
	}

	// A second client sees the writes.
	r2 := e.open()
	if got := mustGet(t, r2, "/kv/a"); string(got.Value) != "two" || got.Version != v2 {
		t.Fatalf("second client Get = %q v%d", got.Value, got.Version)
	}
}

func testCAS(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	c := testenv.Context(t)

	_, err := r.Update(c, "/cas/missing", []byte("x"), 1)
	wantErr(t, "Update missing", err, registry.ErrNotFound)

	v1 := mustPut(t, r, "/cas/k", "a")
	v2, err := r.Update(c, "/cas/k", []byte("b"), v1)
	if err != nil || v2 == v1 || v2 == 0 {
		t.Fatalf("Update with current version = v%d, %v (old v%d)", v2, err, v1)
	}
	_, err = r.Update(c, "/cas/k", []byte("c"), v1)
	wantErr(t, "Update stale", err, registry.ErrBadVersion)
	if got := mustGet(t, r, "/cas/k"); string(got.Value) != "b" {
		t.Fatalf("stale Update wrote: %q", got.Value)
	}

	// Delete and re-create: the old version must not match again (no ABA).
	if err := r.Delete(c, "/cas/k"); err != nil {
		t.Fatal(err)
	}
	_, err = r.Update(c, "/cas/k", []byte("x"), v2)
	wantErr(t, "Update deleted", err, registry.ErrNotFound)
	v3, err := r.Create(c, "/cas/k", []byte("again"))
	if err != nil {
		t.Fatal(err)
	}
	if v3 == v1 || v3 == v2 {
		t.Fatalf("re-created key reused an old version v%d", v3)
	}
	_, err = r.Update(c, "/cas/k", []byte("x"), v2)
	wantErr(t, "Update with version from before re-create", err, registry.ErrBadVersion)

	// Concurrent CAS increments: every success is seen, none lost.
	mustPut(t, r, "/cas/counter", "0")
	const workers, rounds = 4, 10
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < rounds; {
				kv, err := r.Get(c, "/cas/counter")
				if err != nil {
					errs <- err
					return
				}
				var n int
				fmt.Sscan(string(kv.Value), &n)
				_, err = r.Update(c, "/cas/counter", []byte(fmt.Sprint(n+1)), kv.Version)
				if errors.Is(err, registry.ErrBadVersion) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				i++
			}
			errs <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := mustGet(t, r, "/cas/counter"); string(got.Value) != fmt.Sprint(workers*rounds) {
		t.Fatalf("counter = %s after %d CAS increments", got.Value, workers*rounds)
	}
}

func testChildren(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	c := testenv.Context(t)

	got, err := r.Children(c, "/ch")
	if err != nil || len(got) != 0 {
		t.Fatalf("Children of missing key = %v, %v; want empty, nil", got, err)
	}
	for _, k := range []string{"/ch/b", "/ch/a", "/ch/c/deep/x", "/ch/a/sub", "/chx/other", "/ch10/y"} {
		mustPut(t, r, k, "v")
	}
	got, err = r.Children(c, "/ch")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("Children(/ch) = %v, want %v", got, want)
	}
	got, _ = r.Children(c, "/ch/c")
	if want := []string{"deep"}; !slices.Equal(got, want) {
		t.Fatalf("Children(/ch/c) = %v, want %v", got, want)
	}
	got, _ = r.Children(c, "/ch/b")
	if len(got) != 0 {
		t.Fatalf("Children of a leaf = %v", got)
	}
	root, err := r.Children(c, "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ch", "ch10", "chx"} {
		if !slices.Contains(root, want) {
			t.Fatalf("Children(/) = %v, missing %q", root, want)
		}
	}
	if !slices.IsSorted(root) {
		t.Fatalf("Children(/) not sorted: %v", root)
	}

	// Many children come back sorted by name (byte order).
	var want []string
	for i := 0; i < 120; i++ {
		name := fmt.Sprintf("n%d", i)
		want = append(want, name)
		mustPut(t, r, "/many/"+name, "")
	}
	slices.Sort(want)
	got, _ = r.Children(c, "/many")
	if !slices.Equal(got, want) {
		t.Fatalf("Children(/many) = %d names, want %d sorted", len(got), len(want))
	}
}

func testDeleteSubtree(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	c := testenv.Context(t)

	for _, k := range []string{
		"/metadata/db1", "/metadata/db1/schemas/public/tables/t1",
		"/metadata/db1/schemas/public/tables/t2", "/metadata/db10",
		"/metadata/db10/schemas/public/tables/t1", "/metadata/db1x", "/metadata/db",
	} {
		mustPut(t, r, k, "v")
	}
	if err := r.Delete(c, "/metadata/db1"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"/metadata/db1", "/metadata/db1/schemas/public/tables/t1", "/metadata/db1/schemas/public/tables/t2"} {
		if exists(t, r, k) {
			t.Fatalf("%s survived Delete(/metadata/db1)", k)
		}
	}
	for _, k := range []string{"/metadata/db10", "/metadata/db10/schemas/public/tables/t1", "/metadata/db1x", "/metadata/db"} {
		if !exists(t, r, k) {
			t.Fatalf("Delete(/metadata/db1) removed the sibling %s", k)
		}
	}
	got, _ := r.Children(c, "/metadata")
	if slices.Contains(got, "db1") {
		t.Fatalf("Children(/metadata) still lists db1 after its delete: %v", got)
	}
	if err := r.Delete(c, "/metadata/db1"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if err := r.Delete(c, "/never/was"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	// A deleted subtree can be written again.
	mustPut(t, r, "/metadata/db1/x", "again")
	if got := mustGet(t, r, "/metadata/db1/x"); string(got.Value) != "again" {
		t.Fatalf("re-created key = %q", got.Value)
	}
}

// badKeys would escape their path or are not keys at all.
var badKeys = []string{"", "relative/key", "/a/../b", "/..", "/a/./b", "/a//b", "/a/", "/a\x00b", "/a/b\n"}

func testBadKeys(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	s := e.session(r, 0)
	c := testenv.Context(t)
	mustPut(t, r, "/b", "keep")
	ops := map[string]func(key string) error{
		"Get":      func(k string) error { _, err := r.Get(c, k); return err },
		"Children": func(k string) error { _, err := r.Children(c, k); return err },
		"Put":      func(k string) error { _, err := r.Put(c, k, []byte("x")); return err },
		"Create":   func(k string) error { _, err := r.Create(c, k, []byte("x")); return err },
		"Update":   func(k string) error { _, err := r.Update(c, k, []byte("x"), 1); return err },
		"Delete":   func(k string) error { return r.Delete(c, k) },
		"Watch": func(k string) error {
			wc, cancel := context.WithCancel(c)
			defer cancel()
			_, _, err := r.Watch(wc, k)
			return err
		},
		"PutEphemeral":             func(k string) error { return s.PutEphemeral(c, k, []byte("x")) },
		"CreateExclusiveEphemeral": func(k string) error { return s.CreateExclusiveEphemeral(c, k, []byte("x")) },
		"Lock":                     func(k string) error { _, err := s.Lock(c, k); return err },
		"TryLock":                  func(k string) error { _, err := s.TryLock(c, k); return err },
	}
	for name, op := range ops {
		for _, k := range badKeys {
			wantErr(t, fmt.Sprintf("%s(%q)", name, k), op(k), registry.ErrBadKey)
		}
	}
	if got := mustGet(t, r, "/b"); string(got.Value) != "keep" {
		t.Fatalf("a refused key changed /b to %q", got.Value)
	}
	if kids, _ := r.Children(c, "/"); !slices.Equal(kids, []string{"b"}) {
		t.Fatalf("refused keys left something behind: Children(/) = %v", kids)
	}
}

func testClosed(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := h.New(t, e.ns)
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := r.Get(context.Background(), "/x")
	if err == nil {
		t.Fatal("Get after Close succeeded")
	}
	_, err = r.Put(context.Background(), "/x", nil)
	wantErr(t, "Put after Close", err, registry.ErrClosed)
	// Close is idempotent.
	_ = r.Close()
}
