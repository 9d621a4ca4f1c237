package console

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/registry"
)

// SHOW PROCESSLIST and KILL across the cluster, through ShardingSphere's
// trigger protocol (internal/process): every online node, ShardingSphere
// nodes included, answers; a node that does not answer within
// Deps.ProcessTimeout is named in the result's warnings.

var processlistColumns = []Column{
	{Name: "Id"}, {Name: "User"}, {Name: "Host"}, {Name: "db"}, {Name: "Command"},
	{Name: "Time", Type: Int64}, {Name: "State"}, {Name: "Info"},
}

// maxInfo is how much of a statement SHOW PROCESSLIST shows without FULL.
const maxInfo = 100

// A non-admin sees only its own user's sessions (MySQL without the
// PROCESS privilege); statement text is masked where the session records
// it (redact.Statement).
func (e *Engine) showProcesslist(ctx context.Context, s *Session, st *distsql.ShowProcesslist) (*Result, error) {
	c, err := process.Collect(ctx, e.d.Repo, e.d.ProcessTimeout)
	if err != nil {
		return nil, err
	}
	admin := e.grant(s).admin
	now := time.Now().UnixMilli()
	res := &Result{Columns: processlistColumns, Rows: [][]*string{}}
	for _, p := range c.Processes() {
		if !admin && !ownProcess(s, p) {
			continue
		}
		command, state, info := "Sleep", "", ""
		if !p.Idle {
			command = "Execute"
			state = fmt.Sprintf("Executing %d/%d", p.CompletedUnitCount, p.TotalUnitCount)
			info = p.SQL
			if !st.Full && len(info) > maxInfo {
				info = info[:maxInfo]
			}
		}
		secs := int64(0)
		if p.StartMillis > 0 && now > p.StartMillis {
			secs = (now - p.StartMillis) / 1000
		}
		res.Rows = append(res.Rows, strs(p.ID, p.Username, p.Hostname, p.DatabaseName, command, strconv.FormatInt(secs, 10), state, info))
	}
	res.Warnings = unansweredWarnings(c.Unanswered, e.d.ProcessTimeout, "its sessions are not listed")
	return res, nil
}

// isNumber reports whether id is a decimal process number rather than a
// process id.
func isNumber(id string) bool {
	_, err := strconv.ParseUint(id, 10, 32)
	return err == nil
}

func unansweredWarnings(nodes []string, timeout time.Duration, consequence string) []string {
	if len(nodes) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("compute node(s) %s did not answer within %v: %s", strings.Join(nodes, ", "), timeout, consequence)}
}

// kill ends a process, named by its id or by its number (CONNECTION_ID(),
// the MySQL handshake's connection id, the PostgreSQL process id: what the
// mariadb client's Ctrl-C sends as KILL QUERY n).
//
// KILL QUERY cancels the running statement of a session of this node and
// leaves the session open; a number no session of this node has is 1094,
// a process id of another node is ended as by KILL. KILL [CONNECTION] asks every online node to end the process (the node
// that runs it closes the session; shardkeeper nodes resolve numbers too).
// The protocol does not say which node had it; nodes that did not answer
// are named in the warnings. A non-admin may end only its own user's
// processes (1095 otherwise).
func (e *Engine) kill(ctx context.Context, s *Session, st *distsql.Kill) (*Result, error) {
	if err := e.mayKill(ctx, s, st.ProcessID); err != nil {
		return nil, err
	}
	if st.Query {
		if e.d.Processes.Cancel(st.ProcessID) {
			return &Result{}, nil
		}
		if isNumber(st.ProcessID) {
			return nil, unknownThread(st.ProcessID)
		}
	}
	unanswered, err := process.Kill(ctx, e.d.Repo, st.ProcessID, e.d.ProcessTimeout)
	if errors.Is(err, registry.ErrBadKey) {
		return nil, unknownThread(st.ProcessID)
	}
	if err != nil {
		return nil, err
	}
	return &Result{Warnings: unansweredWarnings(unanswered, e.d.ProcessTimeout, "the process may still run there")}, nil
}
