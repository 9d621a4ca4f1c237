package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeAPI mimics the node's HTTP API contract (/api/v1) with in-memory
// state, for the --server paths.
type fakeAPI struct {
	mu     sync.Mutex
	token  string
	status map[string]string
	props  map[string]string
	next   int64
	calls  []string
}

func newFakeAPI(t *testing.T) (*fakeAPI, string) {
	f := &fakeAPI{token: "s3cret", status: map[string]string{"node-a": "OK", "node-b": "OK"},
		props: map[string]string{"sql_show": "false"}, next: 1190422418313265152}
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	fail := func(w http.ResponseWriter, status int, msg string, code int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": msg, "code": code})
	}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	authorized := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			fail(w, http.StatusUnauthorized, "missing or wrong bearer token", 0)
			return false
		}
		return true
	}
	node := func(id string) map[string]any {
		return map[string]any{"instance_id": id, "instance_type": "PROXY", "host": "127.0.0.1", "port": 3307, "status": f.status[id],
			"mode_type": "Cluster", "worker_id": len(id), "version": "shardkeeper-0.1.0", "database_name": ""}
	}
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		reply(w, map[string]any{"nodes": []any{node("node-a"), node("node-b")}})
	})
	mux.HandleFunc("GET /api/v1/nodes/self", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		reply(w, node("node-a"))
	})
	mux.HandleFunc("GET /api/v1/nodes/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.status[r.PathValue("id")]; !ok {
			fail(w, http.StatusNotFound, "Unsupported SQL operation: `"+r.PathValue("id")+"` does not exist.", 30001)
			return
		}
		reply(w, node(r.PathValue("id")))
	})
	mux.HandleFunc("PUT /api/v1/nodes/{id}/state", func(w http.ResponseWriter, r *http.Request) {
		if !authorized(w, r) {
			return
		}
		var body struct{ State string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		defer f.mu.Unlock()
		id := r.PathValue("id")
		f.calls = append(f.calls, "state "+id+" "+body.State)
		if _, ok := f.status[id]; !ok {
			fail(w, http.StatusNotFound, "Unsupported SQL operation: `"+id+"` does not exist.", 30001)
			return
		}
		if body.State == "DISABLE" && f.status[id] == "CIRCUIT_BREAK" {
			fail(w, http.StatusConflict, "Unsupported SQL operation: `"+id+"` compute node has been disabled.", 30001)
			return
		}
		f.status[id] = map[string]string{"ENABLE": "OK", "DISABLE": "CIRCUIT_BREAK"}[body.State]
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /api/v1/keys", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("count"))
		f.mu.Lock()
		defer f.mu.Unlock()
		keys := []string{}
		for range n {
			f.next++
			keys = append(keys, strconv.FormatInt(f.next, 10))
		}
		reply(w, map[string]any{"workerId": 916, "keys": keys})
	})
	mux.HandleFunc("GET /api/v1/keys/{key}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"key": r.PathValue("key"), "unixMillis": 1761777221504, "time": "2025-10-29T22:33:41.504Z",
			"workerId": 916, "sequence": 0, "instanceId": "node-a"})
	})
	mux.HandleFunc("GET /api/v1/props", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		reply(w, map[string]any{"props": []any{map[string]string{"variable_name": "sql_show", "variable_value": f.props["sql_show"]}}})
	})
	mux.HandleFunc("GET /api/v1/props/{name}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		reply(w, map[string]string{"variable_name": r.PathValue("name"), "variable_value": f.props[r.PathValue("name")]})
	})
	mux.HandleFunc("PUT /api/v1/props/{name}", func(w http.ResponseWriter, r *http.Request) {
		if !authorized(w, r) {
			return
		}
		var body struct{ Value string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.props[r.PathValue("name")] = body.Value
		f.calls = append(f.calls, "prop "+r.PathValue("name")+"="+body.Value)
		reply(w, map[string]string{"variable_name": r.PathValue("name"), "variable_value": body.Value})
	})
	mux.HandleFunc("GET /api/v1/databases", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"databases": []any{map[string]any{"name": "sharding_db", "units": 2, "tables": 3}}})
	})
	mux.HandleFunc("GET /api/v1/databases/{db}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("db") != "sharding_db" {
			fail(w, http.StatusNotFound, "Unknown database '"+r.PathValue("db")+"'.", 10000)
			return
		}
		reply(w, map[string]any{"name": "sharding_db",
			"units": map[string]any{"ds_0": map[string]any{"url": "jdbc:postgresql://127.0.0.1:5432/demo_ds_0", "username": "postgres", "password": "******", "maxPoolSize": 50, "minPoolSize": 1}},
			"rules": []any{map[string]any{"type": "sharding"}},
			"schemas": map[string]any{"public": map[string]any{"tables": map[string]any{"t_order": map[string]any{}, "t_item": map[string]any{}},
				"views": []any{}}}})
	})
	return mux
}

func TestServerPaths(t *testing.T) {
	f, url := newFakeAPI(t)
	t.Setenv(envToken, "")
	t.Setenv(envServer, "")
	for _, c := range []struct {
		args []string
		code int
		out  []string // in stdout (or stderr when code != 0)
	}{
		{[]string{"nodes", "list"}, 0, []string{"instance_id   instance_type", "node-a        PROXY           127.0.0.1   3307   OK       Cluster     6"}},
		{[]string{"nodes", "list", "-o", "json"}, 0, []string{`"instance_id": "node-b"`}},
		{[]string{"nodes", "show"}, 0, []string{"node-a"}},
		{[]string{"nodes", "show", "node-b", "-o", "yaml"}, 0, []string{"instance_id: node-b", "worker_id: 6"}},
		{[]string{"nodes", "show", "node-z"}, 1, []string{"Unsupported SQL operation: `node-z` does not exist. (code 30001)"}},
		{[]string{"nodes", "disable", "node-b"}, 1, []string{"missing or wrong bearer token: pass --token-file or set SHARDKEEPER_TOKEN"}},
		{[]string{"nodes", "disable", "node-b", "--token", "s3cret"}, 0, []string{"compute node node-b disabled (status CIRCUIT_BREAK)"}},
		{[]string{"nodes", "disable", "node-b", "--token", "s3cret"}, 1, []string{"Unsupported SQL operation: `node-b` compute node has been disabled. (code 30001)"}},
		{[]string{"nodes", "enable", "node-b", "--token", "s3cret"}, 0, []string{"compute node node-b enabled (status OK)"}},
		{[]string{"nodes", "enable", "node-q", "--token", "s3cret"}, 1, []string{"`node-q` does not exist"}},
		{[]string{"keys", "next", "-n", "3"}, 0, []string{"key\n1190422418313265153\n1190422418313265154\n1190422418313265155\n"}},
		{[]string{"keys", "next", "-o", "json"}, 0, []string{`"workerId": 916`, `"keys": [`}},
		{[]string{"keys", "decode", "1190422418313265152"}, 0, []string{"instance_id", "node-a"}},
		{[]string{"props", "get"}, 0, []string{"variable_name   variable_value\nsql_show        false"}},
		{[]string{"props", "set", "SQL_SHOW", "TRUE", "--token", "s3cret"}, 0, []string{"sql_show = true"}},
		{[]string{"props", "get", "sql-show", "-o", "json"}, 0, []string{`"variable_value": "true"`}},
		{[]string{"databases", "list"}, 0, []string{"name          storage_units   tables\nsharding_db   2               3"}},
		{[]string{"databases", "show", "sharding_db"}, 0, []string{"storage units:", "ds_0   PostgreSQL   127.0.0.1   5432   demo_ds_0   50", "rules:\nrule_type\nsharding", "public        t_item       TABLE", "public        t_order"}},
		{[]string{"databases", "show", "sharding_db", "-o", "json"}, 0, []string{`"password": "******"`}},
		{[]string{"databases", "show", "nope"}, 1, []string{"Unknown database 'nope'. (code 10000)"}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			stdout, stderr, code := runCLI(t, append(c.args, "--server", url)...)
			got := stdout
			if c.code != 0 {
				got = stderr
			}
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout, stderr)
			}
			for _, w := range c.out {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
		})
	}
	f.mu.Lock()
	calls := strings.Join(f.calls, ",")
	f.mu.Unlock()
	want := "state node-b DISABLE,state node-b DISABLE,state node-b ENABLE,state node-q ENABLE,prop sql_show=true"
	if calls != want {
		t.Fatalf("mutations = %s\nwant %s", calls, want)
	}
	// The server URL and token also come from the environment.
	t.Setenv(envServer, url)
	t.Setenv(envToken, "s3cret")
	if out, stderr, code := runCLI(t, "nodes", "disable", "node-a"); code != 0 || !strings.Contains(out, "disabled") {
		t.Fatalf("with the environment: exit %d %s %s", code, out, stderr)
	}
}
