package ensemble

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/shardkeeper/shardkeeper/tools/chaos/members"
	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
)

// StartEtcd starts a static 3-member etcd cluster, member i named after
// hosts[i] and listening on hosts[i].Addr (client port 2379, peer 2380),
// with heartbeat 100 ms, election timeout 1000 ms and auto-compaction off.
// Data goes to dir/<host name> (dir "" means a new temporary directory
// named after the first host's namespace, removed on Close and by
// netns.CleanupStale). Member output goes to logs, each line prefixed with
// "[<host name>] " (nil discards it). ctx bounds the wait until every member
// is healthy and a leader exists, at most 60 s; on failure the started
// members are killed, the data removed, and the error holds their log tails.
func StartEtcd(ctx context.Context, hosts []*netns.Host, dir string, logs io.Writer, opts ...Option) (Ensemble, error) {
	if _, err := exec.LookPath("etcd"); err != nil {
		return nil, fmt.Errorf("chaos: etcd not installed (Debian package etcd-server): %w", err)
	}
	out, err := exec.Command("etcd", "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("chaos: etcd --version: %w", err)
	}
	version := "etcd"
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd Version: "); ok {
			version = "etcd " + strings.TrimSpace(v)
		}
	}
	c, err := members.New("etcd", hosts, dir, logs, buildOptions(opts).cpus)
	if err != nil {
		return nil, err
	}
	e := &etcdEnsemble{Set: c, version: version}
	var initial []string
	for _, h := range hosts {
		initial = append(initial, fmt.Sprintf("%s=http://%s:2380", h.Name, h.Addr))
	}
	c.Command = func(i int) []string {
		h := hosts[i]
		client := fmt.Sprintf("http://%s:2379", h.Addr)
		peer := fmt.Sprintf("http://%s:2380", h.Addr)
		return []string{"etcd",
			"--name", h.Name,
			"--data-dir", c.Dir(i),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "chaos-" + hosts[0].NS,
			"--heartbeat-interval", "100", "--election-timeout", "1000",
			"--auto-compaction-retention", "0",
			"--logger", "zap", "--log-outputs", "stderr", "--log-level", "info",
		}
	}
	c.Alive = func(ctx context.Context, i int) error {
		_, err := e.get(ctx, i, "/version")
		return err
	}
	c.Serving = func(ctx context.Context, i int) error {
		body, err := e.get(ctx, i, "/health")
		if err != nil {
			return err
		}
		var h struct{ Health string }
		if err := json.Unmarshal(body, &h); err != nil || h.Health != "true" {
			return fmt.Errorf("unhealthy: %s", bytes.TrimSpace(body))
		}
		return nil
	}
	if err := c.StartAll(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

type etcdEnsemble struct {
	*members.Set
	version string

	idsMu sync.Mutex
	ids   map[uint64]int // member id -> index
}

func (e *etcdEnsemble) Endpoints() []string { return e.Addrs(2379) }
func (e *etcdEnsemble) Version() string     { return e.version }

func (e *etcdEnsemble) get(ctx context.Context, i int, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("http://%s:2379%s", e.Hosts()[i].Addr, path), nil)
	if err != nil {
		return nil, err
	}
	return e.do(req)
}

func (e *etcdEnsemble) post(ctx context.Context, i int, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		fmt.Sprintf("http://%s:2379%s", e.Hosts()[i].Addr, path), strings.NewReader("{}"))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return e.do(req)
}

func (e *etcdEnsemble) do(req *http.Request) ([]byte, error) {
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("%s: %s: %s", req.URL.Path, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

// etcdStatus is the JSON of the gRPC gateway's /v3/maintenance/status;
// 64-bit numbers come as strings.
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader   string `json:"leader"`
	RaftTerm string `json:"raftTerm"`
}

func (e *etcdEnsemble) Leader(ctx context.Context) (int, error) {
	type report struct{ leader, term uint64 }
	reports := e.Probe(ctx, func(ctx context.Context, i int) (any, error) {
		body, err := e.post(ctx, i, "/v3/maintenance/status")
		if err != nil {
			return nil, err
		}
		var s etcdStatus
		if err := json.Unmarshal(body, &s); err != nil {
			return nil, err
		}
		self, _ := strconv.ParseUint(s.Header.MemberID, 10, 64)
		leader, _ := strconv.ParseUint(s.Leader, 10, 64)
		term, _ := strconv.ParseUint(s.RaftTerm, 10, 64)
		e.idsMu.Lock()
		if e.ids == nil {
			e.ids = make(map[uint64]int)
		}
		if self != 0 {
			e.ids[self] = i
		}
		e.idsMu.Unlock()
		return report{leader, term}, nil
	})
	var best report
	for _, r := range reports {
		if r, ok := r.(report); ok && r.leader != 0 && r.term >= best.term {
			best = r
		}
	}
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	if best.leader == 0 {
		return -1, ErrNoLeader
	}
	e.idsMu.Lock()
	i, ok := e.ids[best.leader]
	e.idsMu.Unlock()
	if !ok {
		if err := e.learnIDs(ctx); err != nil {
			return -1, err
		}
		e.idsMu.Lock()
		i, ok = e.ids[best.leader]
		e.idsMu.Unlock()
	}
	if !ok {
		return -1, fmt.Errorf("%w: leader id %x is not a known member", ErrNoLeader, best.leader)
	}
	return i, nil
}

// learnIDs maps member ids to indexes through the member list of any
// member that answers.
func (e *etcdEnsemble) learnIDs(ctx context.Context) error {
	var errs []error
	for i := range e.Hosts() {
		if !e.Available(i) {
			continue
		}
		body, err := e.post(ctx, i, "/v3/cluster/member/list")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var list struct {
			Members []struct {
				ID   string `json:"ID"`
				Name string `json:"name"`
			} `json:"members"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			errs = append(errs, err)
			continue
		}
		e.idsMu.Lock()
		if e.ids == nil {
			e.ids = make(map[uint64]int)
		}
		for _, m := range list.Members {
			id, _ := strconv.ParseUint(m.ID, 10, 64)
			for j, h := range e.Hosts() {
				if h.Name == m.Name {
					e.ids[id] = j
				}
			}
		}
		e.idsMu.Unlock()
		return nil
	}
	return fmt.Errorf("chaos: etcd member list: %w", errors.Join(errs...))
}
