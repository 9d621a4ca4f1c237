package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
	"github.com/shardkeeper/shardkeeper/tools/chaos/node"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// nodeProc is one node's process, restarted as new incarnations.
type nodeProc struct {
	r    *runner
	name string
	host *netns.Host

	mu     sync.Mutex
	k      int           // incarnations started
	behind time.Duration // how far behind the current incarnation's clock started
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan struct{} // closed when the current process has exited
	// ending is set while the current process is killed or asked to stop;
	// a DistSQL run's node that exits without it (a shardkeeper node that
	// gave up, e.g. its instance id still held after a kill) is started
	// again after supervisorPause, as a service manager would.
	ending bool
	closed bool // the run is over: no more restarts
}

// supervisorPause is how long a DistSQL run waits before it starts again a
// node that exited by itself.
const supervisorPause = time.Second

// Name is the node's name.
func (p *nodeProc) Name() string { return p.name }

// Host is the node's host.
func (p *nodeProc) Host() *netns.Host { return p.host }

// Start starts the next incarnation with its clock behind by behind.
func (p *nodeProc) Start(behind time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.k++
	p.behind = behind
	p.ending = false
	inc := record.IncarnationName(p.name, p.k)
	cfg := p.r.cfg
	dir := filepath.Join(cfg.Dir, "nodes", p.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(dir, inc+".log"))
	if err != nil {
		return err
	}
	args := []string{"node", "--dir", cfg.Dir, "--node", p.name, "--incarnation", inc,
		"--registry", cfg.Registry, "--endpoints", strings.Join(p.r.ensemble.Endpoints(), ","),
		"--namespace", registryNamespace, "--ttl", cfg.SessionTTL.String(), "--reservation", cfg.Reservation.String(),
		"--rate", strconv.Itoa(cfg.Rate), "--variant", string(cfg.Variant), "--clock-offset", (-behind).String()}
	binary := cfg.Binary
	if cfg.Workload == record.WorkloadDistSQL {
		binary, args = cfg.Shardkeeper, p.serveArgs()
	}
	prog := binary
	if runtime.NumCPU() >= 2 {
		// The servers run on CPU 0 (ensemble.WithCPUs), the nodes on CPU 1.
		prog, args = "taskset", append([]string{"-c", "1", binary}, args...)
	}
	cmd := p.host.Command(context.Background(), prog, args...)
	if cfg.Workload == record.WorkloadDistSQL {
		cmd.Env = append(os.Environ(), p.r.serveEnv()...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logFile.Close()
		return err
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("chaos: start node %s: %w", inc, err)
	}
	done := make(chan struct{})
	p.cmd, p.stdin, p.done = cmd, stdin, done
	go func() {
		werr := cmd.Wait()
		logFile.Close()
		exit := "exit 0"
		if werr != nil {
			exit = werr.Error()
		}
		p.r.faultsMu.Lock()
		_ = record.AppendJSONLine(filepath.Join(cfg.Dir, "processes.jsonl"), record.ProcessRecord{Incarnation: inc, Node: p.name,
			PID: cmd.Process.Pid, Start: started.UnixNano(), End: time.Now().UnixNano(), Exit: exit})
		p.r.faultsMu.Unlock()
		close(done)
		p.mu.Lock()
		restart := cfg.Workload == record.WorkloadDistSQL && !p.ending && !p.closed
		p.mu.Unlock()
		if restart {
			time.Sleep(supervisorPause)
			p.mu.Lock()
			restart = p.done == done && !p.ending // nobody started another meanwhile
			p.mu.Unlock()
		}
		if restart {
			if err := p.Start(0); err != nil {
				p.r.log.Warn("starting a node again", "node", p.name, "err", err)
			}
		}
	}()
	return nil
}

// Current returns the current incarnation's name and how far behind its
// clock started.
func (p *nodeProc) Current() (string, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return record.IncarnationName(p.name, p.k), p.behind
}

// Signal sends sig to the current process's group.
func (p *nodeProc) Signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// Kill sends SIGKILL and waits until the process is gone.
func (p *nodeProc) Kill() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.ending = true
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("node %s did not die after SIGKILL", p.name)
	}
}

// Command sends one control line to the current process.
func (p *nodeProc) Command(line string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stdin == nil {
		return errors.New("no process")
	}
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// stop resumes the process (it may be paused), asks it to leave and kills
// it after grace.
func (p *nodeProc) stop(grace time.Duration) {
	p.mu.Lock()
	p.ending, p.closed = true, true
	p.mu.Unlock()
	p.Signal(syscall.SIGCONT)
	if p.r.cfg.Workload == record.WorkloadDistSQL {
		p.Signal(syscall.SIGTERM) // serve leaves on SIGTERM
	} else {
		_ = p.Command(node.CmdStop)
	}
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.Kill()
	}
}
