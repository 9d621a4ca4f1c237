package ensemble

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/members"
	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
)

// StartZooKeeper starts a 3-server ZooKeeper ensemble (QuorumPeerMain from
// /usr/share/java/zookeeper.jar), server i with myid i+1 listening on
// hosts[i].Addr (client 2181, quorum 2888, election 3888), tickTime 200 ms
// (sessions of 400 ms to 60 s are granted as asked), initLimit 10 and
// syncLimit 5 ticks, 4lw commands srvr, ruok, mntr and stat. Each JVM runs
// with -Xmx256m and the serial collector. Data goes to dir/<host name> (dir
// "" means a new temporary directory, removed on Close); output goes to
// logs like StartEtcd's. ctx bounds the wait until every server answers
// ruok and serves as leader or follower, at most 60 s; on failure
// everything is removed and the error holds the log tails.
func StartZooKeeper(ctx context.Context, hosts []*netns.Host, dir string, logs io.Writer, opts ...Option) (Ensemble, error) {
	const jar = "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("chaos: ZooKeeper not installed (Debian package zookeeper): %w", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("chaos: java not installed (Debian package default-jre-headless): %w", err)
	}
	c, err := members.New("zookeeper", hosts, dir, logs, buildOptions(opts).cpus)
	if err != nil {
		return nil, err
	}
	z := &zkEnsemble{Set: c}
	// Debian's zookeeper.jar names only slf4j-api in its class path, so the
	// servers log nothing; add the log4j binding when it is installed.
	classpath := "/etc/zookeeper/conf:" + jar
	for _, j := range []string{"/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"} {
		if _, err := os.Stat(j); err == nil {
			classpath += ":" + j
		}
	}
	var servers []string
	for i, h := range hosts {
		servers = append(servers, fmt.Sprintf("server.%d=%s:2888:3888", i+1, h.Addr))
	}
	for i, h := range hosts {
		cfg := strings.Join(append([]string{
			"tickTime=200",
			"initLimit=10",
			"syncLimit=5",
			"minSessionTimeout=400",
			"maxSessionTimeout=60000",
			"dataDir=" + filepath.Join(c.Dir(i), "data"),
			"clientPort=2181",
			"clientPortAddress=" + h.Addr.String(),
			"admin.enableServer=false",
			"4lw.commands.whitelist=srvr,ruok,mntr,stat",
			"maxClientCnxns=0",
			"preAllocSize=4096",
			"reconfigEnabled=false",
		}, servers...), "\n") + "\n"
		if err := os.MkdirAll(filepath.Join(c.Dir(i), "data"), 0o755); err != nil {
			_ = c.RemoveDirs()
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(c.Dir(i), "data", "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
			_ = c.RemoveDirs()
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(c.Dir(i), "zoo.cfg"), []byte(cfg), 0o644); err != nil {
			_ = c.RemoveDirs()
			return nil, err
		}
	}
	c.Command = func(i int) []string {
		return []string{"java",
			"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
			"-Djava.net.preferIPv4Stack=true",
			"-Dzookeeper.log.dir=" + c.Dir(i),
			"-Dzookeeper.root.logger=INFO,CONSOLE",
			"-Dlog4j.configuration=file:/etc/zookeeper/conf/log4j.properties",
			"-Dzookeeper.jmx.log4j.disable=true",
			"-Dzookeeper.cnxTimeout=1000",
			"-cp", classpath,
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(c.Dir(i), "zoo.cfg"),
		}
	}
	c.Alive = func(ctx context.Context, i int) error {
		out, err := z.fourLetter(ctx, i, "ruok")
		if err == nil && out != "imok" {
			err = fmt.Errorf("ruok: %q", out)
		}
		return err
	}
	c.Serving = func(ctx context.Context, i int) error {
		out, err := z.fourLetter(ctx, i, "srvr")
		if err != nil {
			return err
		}
		if mode := srvrField(out, "Mode"); mode != "leader" && mode != "follower" {
			return fmt.Errorf("not serving: %q", out)
		}
		return nil
	}
	if err := c.StartAll(ctx); err != nil {
		return nil, err
	}
	z.version = "zookeeper"
	if out, err := z.fourLetter(ctx, 0, "srvr"); err == nil {
		v := srvrField(out, "Zookeeper version")
		v, _, _ = strings.Cut(v, "-")
		v, _, _ = strings.Cut(v, ",")
		z.version = "zookeeper " + v
	}
	return z, nil
}

type zkEnsemble struct {
	*members.Set
	version string
}

func (z *zkEnsemble) Endpoints() []string { return z.Addrs(2181) }
func (z *zkEnsemble) Version() string     { return z.version }

// fourLetter sends a four-letter-word command to member i and returns the
// whole answer.
func (z *zkEnsemble) fourLetter(ctx context.Context, i int, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(z.Hosts()[i].Addr.String(), "2181"))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	out, err := io.ReadAll(io.LimitReader(conn, 64<<10))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// srvrField returns the value of "key: value" in a srvr answer.
func srvrField(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func (z *zkEnsemble) Leader(ctx context.Context) (int, error) {
	reports := z.Probe(ctx, func(ctx context.Context, i int) (any, error) {
		out, err := z.fourLetter(ctx, i, "srvr")
		if err != nil {
			return nil, err
		}
		if srvrField(out, "Mode") != "leader" {
			return nil, nil
		}
		zxid, _ := strconv.ParseUint(strings.TrimPrefix(srvrField(out, "Zxid"), "0x"), 16, 64)
		return zxid >> 32, nil // epoch
	})
	leader, best := -1, uint64(0)
	for i, r := range reports {
		if epoch, ok := r.(uint64); ok && (leader < 0 || epoch > best) {
			leader, best = i, epoch
		}
	}
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	if leader < 0 {
		return -1, ErrNoLeader
	}
	return leader, nil
}
