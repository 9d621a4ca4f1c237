package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestHostileServeConfFIFO runs the real serve binary on a conf dir whose
// global.yaml is a named pipe nobody writes: the process must not hang in
// loading; with SIGTERM sent while it would be stuck, it exits promptly,
// naming the pipe.
func TestHostileServeConfFIFO(t *testing.T) {
	bin := testenv.ShardkeeperBinary(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "global.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "serve", "--conf", dir, "--http", "off", "--data-dir", filepath.Join(t.TempDir(), "data"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(time.Second):
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("serve still running 10s after SIGTERM while loading a FIFO conf file\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
		}
	}
	if err == nil {
		t.Fatalf("serve exited 0 on a FIFO conf file\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	}
	if want := fifo + " is a named pipe (FIFO), not a regular file"; !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr does not say %q:\n%s", want, &stderr)
	}
}

// TestHostileTokenFile: a token file that is /dev/zero, a pipe, oversized,
// empty or several lines is refused with its path before anything starts,
// in serve and in the admin verbs.
func TestHostileTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, want string }{
		{"/dev/zero", "/dev/zero is a character device, not a regular file"},
		{fifo, fifo + " is a named pipe (FIFO), not a regular file"},
		{dir, dir + " is a directory, not a regular file"},
		{write("big", strings.Repeat("t", 5000)), "larger than the 4 KiB limit"},
		{write("empty", " \n"), "is empty"},
		{write("lines", "one\ntwo\n"), "holds more than one line"},
		{filepath.Join(dir, "missing"), "no such file or directory"},
	}
	for _, c := range cases {
		_, stderr, code := runCLI(t, "serve", "--token-file", c.path, "--http", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--stop-after", "1ms")
		if code != exitError || !strings.Contains(stderr, "--token-file") || !strings.Contains(stderr, c.want) {
			t.Errorf("serve --token-file %s: exit %d, stderr %q, want %q", c.path, code, stderr, c.want)
		}
		_, stderr, code = runCLI(t, "nodes", "list", "--server", "http://127.0.0.1:1", "--token-file", c.path)
		if code != exitError || !strings.Contains(stderr, "--token-file") || !strings.Contains(stderr, c.want) {
			t.Errorf("nodes list --token-file %s: exit %d, stderr %q, want %q", c.path, code, stderr, c.want)
		}
	}
	_, url := newFakeAPI(t)
	t.Setenv(envToken, "")
	good := write("token", "s3cret\n")
	if out, stderr, code := runCLI(t, "nodes", "disable", "node-b", "--server", url, "--token-file", good); code != 0 || !strings.Contains(out, "disabled") {
		t.Errorf("nodes disable --token-file: exit %d\n%s%s", code, out, stderr)
	}
	t.Setenv(envToken, "s3cret")
	if out, stderr, code := runCLI(t, "nodes", "enable", "node-b", "--server", url); code != 0 || !strings.Contains(out, "enabled") {
		t.Errorf("nodes enable with $%s: exit %d\n%s%s", envToken, code, out, stderr)
	}
	if _, stderr, code := runCLI(t, "nodes", "list", "--server", url, "--token", "x", "--token-file", good); code != exitUsage || !strings.Contains(stderr, "give one") {
		t.Errorf("--token with --token-file: exit %d, stderr %q", code, stderr)
	}
}

// TestHostileTokenFlagHelp: the admin verbs offer --token-file, and the
// help of --token says that the flag is visible to other users.
func TestHostileTokenFlagHelp(t *testing.T) {
	for _, verb := range [][]string{{"nodes", "disable"}, {"props", "set"}, {"keys", "next"}, {"databases", "list"}} {
		cmd, _, err := newRootCommand().Find(verb)
		if err != nil {
			t.Fatalf("%v: %v", verb, err)
		}
		flags := cmd.InheritedFlags()
		flags.AddFlagSet(cmd.LocalFlags())
		token, file := flags.Lookup("token"), flags.Lookup("token-file")
		if token == nil || file == nil {
			t.Errorf("%v: --token %v, --token-file %v", verb, token != nil, file != nil)
			continue
		}
		if !strings.Contains(token.Usage, "ps") || !strings.Contains(token.Usage, "prefer --token-file or $"+envToken) {
			t.Errorf("%v --token help %q does not warn that the token shows in ps", verb, token.Usage)
		}
		if !strings.Contains(file.Usage, "$"+envToken) {
			t.Errorf("%v --token-file help %q does not name $%s", verb, file.Usage, envToken)
		}
	}
	out, _, code := runCLI(t, "nodes", "disable", "--help")
	if code != 0 || !strings.Contains(out, "--token-file") || !strings.Contains(out, "in ps") {
		t.Errorf("nodes disable --help (exit %d):\n%s", code, out)
	}
}

// TestHostileServerListsNoLookup: a malformed server-lists entry in a conf
// dir is refused with file:line before any connection attempt: the real
// binary, with the Go resolver's debug output on, makes no DNS lookup.
func TestHostileServerListsNoLookup(t *testing.T) {
	bin := testenv.ShardkeeperBinary(t)
	for _, c := range []struct{ typ, servers, want string }{
		{"ZooKeeper", "lookup-probe.invalid:abc", `port "abc" must be a number`},
		{"ZooKeeper", "lookup-probe.invalid:99999", `port "99999" must be a number`},
		{"etcd", "http://lookup-probe.invalid:99999", `port "99999" must be a number`},
		{"etcd", "http://[::1:2379", "is not a valid URL"},
	} {
		dir := t.TempDir()
		global := "mode:\n  type: Cluster\n  repository:\n    type: " + c.typ + "\n    props:\n      namespace: ns\n      server-lists: \"" + c.servers + "\"\n"
		if err := os.WriteFile(filepath.Join(dir, "global.yaml"), []byte(global), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"registry", "ls", "/", "--conf", dir, "--timeout", "2s"}, {"serve", "--conf", dir, "--http", "off", "--timeout", "2s"}} {
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "GODEBUG=netdns=go+2")
			out, err := cmd.CombinedOutput()
			at := filepath.Join(dir, "global.yaml") + ":7: mode.repository.props.server-lists: "
			if err == nil || !strings.Contains(string(out), at) || !strings.Contains(string(out), c.want) {
				t.Errorf("%s %q, %s: err %v, output:\n%s\nwant %q at %q", c.typ, c.servers, args[0], err, out, c.want, at)
			}
			if strings.Contains(string(out), "hostLookupOrder(lookup-probe.invalid)") {
				t.Errorf("%s %q, %s: a DNS lookup was made:\n%s", c.typ, c.servers, args[0], out)
			}
		}
	}
}
