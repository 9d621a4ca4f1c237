package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// docFiles are the pages whose command examples TestDocExamples runs.
var docFiles = []string{"../../README.md", "../../docs/cli.md"}

// docExample is one command of a page's examples, with the output the page
// shows after it (fenced blocks of "$ command" and output lines), if any.
type docExample struct {
	where   string // file:line
	command string // one line, continuations joined
	output  []string
}

// docPrograms are the programs whose examples run; other lines (make, go,
// shell loops, YAML) are not commands to run here.
var docPrograms = map[string]bool{"shardkeeper": true, "curl": true, "mariadb": true, "psql": true}

// extractExamples returns the command examples of a Markdown page: the
// lines of its code blocks (indented or fenced) that run a program of
// docPrograms, after an optional "$ " prompt and VAR=value settings.
func extractExamples(t *testing.T, path string) []docExample {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out     []docExample
		fenced  bool
		current *docExample
	)
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "```") {
			fenced, current = !fenced, nil
			continue
		}
		code := fenced
		if !fenced && strings.HasPrefix(line, "    ") {
			code, line = true, line[4:]
		}
		if !code {
			current = nil
			continue
		}
		prompt := strings.HasPrefix(line, "$ ")
		text := strings.TrimPrefix(line, "$ ")
		start := i + 1
		for strings.HasSuffix(text, "\\") && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, "\\") + " " + strings.TrimSpace(strings.TrimPrefix(lines[i], "    "))
		}
		if docPrograms[programOf(text)] {
			out = append(out, docExample{where: filepath.Base(path) + ":" + strconv.Itoa(start), command: text})
			current = nil
			if prompt && fenced {
				current = &out[len(out)-1]
			}
			continue
		}
		if current != nil && fenced && !prompt && strings.TrimSpace(line) != "" {
			current.output = append(current.output, line)
		}
	}
	return out
}

// programOf returns the program a command line runs, past VAR=value
// settings.
func programOf(line string) string {
	for _, f := range strings.Fields(line) {
		if !regexp.MustCompile(`^[A-Z_]+=`).MatchString(f) {
			return f
		}
	}
	return ""
}

// shellWords splits a command line as sh does for the examples' forms:
// white space, single and double quotes, and a comment from a "#" that
// starts a word. It reports false for a line that needs more of the
// shell (pipes, substitutions, redirections, several commands).
func shellWords(line string) ([]string, bool) {
	var (
		words []string
		cur   strings.Builder
		in    bool // a word is open
		quote rune
	)
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words, in = append(words, cur.String()), false
				cur.Reset()
			}
		case r == '#' && !in:
			return words, quote == 0
		case strings.ContainsRune("|;&<>$`()", r):
			return nil, false
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, quote == 0
}

// placeholder matches a synopsis word: an upper-case name (ID, DB,
// KEY..., NAME, VALUE), an alternative (a|b) or an optional part ([..]).
var placeholder = regexp.MustCompile(`^[A-Z][A-Z_]*(\.\.\.)?$|\||^\[|\.\.\.`)

// TestDocExamples runs the command examples of the README and
// docs/cli.md (shardkeeper, curl, mariadb, psql) against a node it starts
// as the README does (serve --conf with the example conf dir's
// global.yaml: Standalone on the embedded registry, user root/root), and
// against the test environment's etcd and ZooKeeper where an example names
// them. The pages' addresses are those of the test's servers: serve's
// default ports, the conf dir, the data dir, the token file. A synopsis
// (placeholders such as ID or DB, alternatives a|b) and serve itself are
// not run. An example passes when it exits 0, or, where the page shows an
// error after it, fails with that error; where the page shows a
// shardkeeper table, the command prints the same header.
func TestDocExamples(t *testing.T) {
	t.Setenv(envServer, "")
	t.Setenv(envToken, "")
	dir := t.TempDir()
	confDir, dataDir, tokenFile := filepath.Join(dir, "conf"), filepath.Join(dir, "shardkeeper-data"), filepath.Join(dir, "token")
	global, err := os.ReadFile("../../conf/global.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const dataDirProp = "      dataDir: shardkeeper-data\n"
	if !bytes.Contains(global, []byte(dataDirProp)) {
		t.Fatalf("conf/global.yaml has no %q to point at the test's data dir", dataDirProp)
	}
	global = bytes.Replace(global, []byte(dataDirProp), []byte("      dataDir: "+dataDir+"\n      clientUrl: http://127.0.0.1:0\n"), 1)
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "global.yaml"), global, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("doc-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	output, stop := startServe(t, "--conf", confDir, "--instance-id", "readme-1", "--http", "127.0.0.1:0", "--token-file", tokenFile,
		"--mysql", "127.0.0.1:0", "--postgresql", "127.0.0.1:0", "--port", "3307")
	defer stop()
	addr := func(re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(output())
		if m == nil {
			t.Fatalf("no %s in the serve output:\n%s", re, output())
		}
		return m[1]
	}
	httpAddr := addr(`HTTP API and status page on http://(127\.0\.0\.1:\d+)/`)
	mysqlPort := addr(`MySQL protocol on 127\.0\.0\.1:(\d+)`)
	pgPort := addr(`PostgreSQL protocol on 127\.0\.0\.1:(\d+)`)
	etcd, zk := realRegistries(t)[0].servers, realRegistries(t)[1].servers
	seedProps(t, config.RepositoryEtcd, etcd)
	seedProps(t, config.RepositoryZooKeeper, zk)

	// The pages' addresses and paths, and the test's.
	local := strings.NewReplacer(
		"http://127.0.0.1:8080", "http://"+httpAddr,
		"http://127.0.0.1:2379", etcd,
		"127.0.0.1:2181", zk,
		"./shardkeeper-data", dataDir,
		"./conf", confDir,
		"./token", tokenFile,
		"-P 3307", "-P "+mysqlPort,
		"-p 5433", "-p "+pgPort,
		"port 5433", "port "+pgPort,
	)
	ran := 0
	for _, file := range docFiles {
		for _, ex := range extractExamples(t, file) {
			if programOf(ex.command) == "shardkeeper" && synopsisLine(ex.command) {
				ran++
				t.Run(ex.where, func(t *testing.T) { checkSynopsis(t, ex.command) })
				continue
			}
			words, ok := shellWords(local.Replace(ex.command))
			if !ok || len(words) == 0 {
				t.Logf("%s: not a single command, not run: %s", ex.where, ex.command)
				continue
			}
			var env []string
			for len(words) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
				env, words = append(env, words[0]), words[1:]
			}
			if synopsis(words) {
				t.Logf("%s: a synopsis, not run: %s", ex.where, ex.command)
				continue
			}
			ran++
			t.Run(ex.where, func(t *testing.T) {
				words := askTheNode(words, "http://"+httpAddr)
				stdout, stderr, err := runExample(t, env, words)
				want := strings.Join(ex.output, "\n")
				failure := strings.HasPrefix(want, "ERROR") || strings.HasPrefix(want, "psql: error")
				switch {
				case failure && err == nil:
					t.Fatalf("%s\nsucceeded; the page shows it failing:\n%s\nstdout:\n%s", ex.command, want, stdout)
				case failure && !strings.Contains(collapse(stdout+stderr), collapse(local.Replace(ex.output[0]))):
					t.Fatalf("%s\nfailed otherwise than the page shows (%q):\nstdout:\n%s\nstderr:\n%s", ex.command, ex.output[0], stdout, stderr)
				case !failure && err != nil:
					t.Fatalf("%s\n%v\nstdout:\n%s\nstderr:\n%s", ex.command, err, stdout, stderr)
				case !failure && words[0] == "shardkeeper" && len(ex.output) > 0:
					if got, _, _ := strings.Cut(stdout, "\n"); collapse(got) != collapse(ex.output[0]) {
						t.Fatalf("%s\nprints the header %q; the page shows %q", ex.command, got, ex.output[0])
					}
				}
			})
		}
	}
	if ran < 12 {
		t.Fatalf("only %d examples ran: the extraction is broken", ran)
	}
	t.Logf("%d examples ran", ran)
}

// synopsisLine says whether a shardkeeper example is a synopsis: it has
// placeholders (ID, KEY..., [NAME...]) or alternatives (a|b).
func synopsisLine(line string) bool {
	code, _, _ := strings.Cut(line, "#")
	for _, w := range strings.Fields(code)[1:] {
		if placeholder.MatchString(strings.Trim(w, `"`)) {
			return true
		}
	}
	return false
}

// checkSynopsis checks that a synopsis such as "shardkeeper noun verb|verb
// [-f VALUE] ARG" names commands and flags that exist: each verb's help
// is its own, and names the flags that follow the verb.
func checkSynopsis(t *testing.T, line string) {
	t.Helper()
	code, _, _ := strings.Cut(line, "#")
	tokens := strings.FieldsFunc(code, func(r rune) bool { return r == ' ' || r == '|' || r == '[' || r == ']' || r == '"' })
	noun, rest := tokens[1], tokens[2:]
	verbs, flags := []string{""}, map[string][]string{}
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		switch {
		case strings.HasPrefix(w, "-"):
			v := verbs[len(verbs)-1]
			flags[v] = append(flags[v], w)
			if i+1 < len(rest) && !strings.HasPrefix(rest[i+1], "-") {
				i++ // the flag's value
			}
		case placeholder.MatchString(w) || strings.ToLower(w) != w:
		default:
			verbs = append(verbs, w)
		}
	}
	if len(verbs) > 1 && len(flags[""]) == 0 {
		verbs = verbs[1:] // the noun alone needs no check
	}
	for _, v := range verbs {
		args := strings.Fields(noun + " " + v)
		stdout, stderr, code := runCLI(t, append(args, "--help")...)
		usage := "shardkeeper " + strings.Join(args, " ")
		if code != 0 || !strings.Contains(stdout, "Usage:\n  "+usage) {
			t.Errorf("%s: %q is not a command: exit %d\n%s%s", line, usage, code, stdout, stderr)
			continue
		}
		for _, f := range flags[v] {
			if !regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(f) + `[\s,=]`).MatchString(stdout) {
				t.Errorf("%s: %s has no flag %s:\n%s", line, usage, f, stdout)
			}
		}
	}
}

// synopsis says whether words are a command's synopsis rather than a
// command, or a command this test does not run (serve: the test started
// the node).
func synopsis(words []string) bool {
	if words[0] == "shardkeeper" && len(words) > 1 && words[1] == "serve" {
		return true
	}
	for _, w := range words[1:] {
		if placeholder.MatchString(w) {
			return true
		}
	}
	return false
}

// askTheNode returns a shardkeeper example that names no registry and no
// node (no --server, --conf, --repository-type or --server-lists) with
// --server server added where its command has that flag and is not marked
// offline (annotationOffline: keys decode): the page's node is the test's node. Without it the command would open the default
// embedded registry itself, in the package directory on the fixed port
// 2379, and fail whenever anything else holds that port.
func askTheNode(words []string, server string) []string {
	if words[0] != "shardkeeper" {
		return words
	}
	for _, w := range words[1:] {
		for _, f := range []string{"--server", "--conf", "--repository-type", "--server-lists"} {
			if w == f || strings.HasPrefix(w, f+"=") {
				return words
			}
		}
	}
	c, _, err := newRootCommand().Find(words[1:])
	if err != nil || c.Flag("server") == nil || c.Annotations[annotationOffline] != "" {
		return words
	}
	return append(slices.Clone(words), "--server", server)
}

// runExample runs one example: shardkeeper in-process, anything else as
// a process with env added to its environment. A watch runs for 2 s.
func runExample(t *testing.T, env, words []string) (stdout, stderr string, err error) {
	t.Helper()
	timeout := 60 * time.Second
	if len(words) > 2 && words[1] == "registry" && words[2] == "watch" {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errb bytes.Buffer
	if words[0] == "shardkeeper" {
		cmd := newRootCommand()
		cmd.SetOut(&out)
		cmd.SetErr(&errb)
		cmd.SetArgs(words[1:])
		err = cmd.ExecuteContext(ctx)
		return out.String(), errb.String(), err
	}
	if _, lerr := exec.LookPath(words[0]); lerr != nil {
		t.Skipf("%s is not installed", words[0])
	}
	cmd := exec.CommandContext(ctx, words[0], words[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// collapse joins the words of s with one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// seedProps writes /props in the default namespace of the registry typ
// at servers as a ShardingSphere 5.5 node does (active_version 0,
// versions/0), for the examples that read it, and removes it at the end.
func seedProps(t *testing.T, typ, servers string) {
	t.Helper()
	ctx := testenv.Context(t)
	c := config.DefaultMode().Repository
	c.Type, c.ServerLists, c.Namespace, c.DataDir = typ, strings.Split(servers, ","), config.DefaultNamespace, ""
	r, err := connect.Open(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []registry.KV{{Key: "/props/versions/0", Value: []byte("sql-show: false\n")}, {Key: "/props/active_version", Value: []byte("0")}} {
		if _, err := r.Put(ctx, kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := r.Delete(context.Background(), "/props"); err != nil && !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("clean /props: %v", err)
		}
		_ = r.Close()
	})
}
