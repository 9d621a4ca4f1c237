// Package netns is the chaos harness's test network: a Linux bridge with
// one network namespace per host, and the faults it injects between hosts
// (blackholes, dropped packets, partitions, lost replies) by routes and
// routing rules inside the host namespaces.
package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrSubnetInUse is returned by NewNetwork when an interface of the root
// namespace already has an address inside the requested subnet, for example
// the bridge of another run that is still going or was not cleaned up.
var ErrSubnetInUse = errors.New("chaos: subnet already in use")

// TempDirPrefix starts the names of the temporary directories named after
// a host's namespace ("chaos-<namespace>-..."); CleanupStale removes them
// with the namespaces.
const TempDirPrefix = "chaos-"

// maxLinkName is the longest name Linux accepts for a network interface
// (IFNAMSIZ - 1).
const maxLinkName = 15

// Network is a test subnet on one Linux bridge in the root namespace. Every
// host is a network namespace named "<prefix>-<host>" with one veth whose
// root end "<prefix>-<host>" is a port of the bridge "<prefix>" and whose
// namespace end is "eth0" with one address of the subnet. The bridge holds
// the last address of the subnet (.254 in a /24), so code in the root
// namespace reaches every host; hosts reach each other directly over the
// bridge. The bridge has no uplink, so no traffic leaves the machine.
//
// Faults change routes and routing rules inside the host namespaces only; the
// root namespace is never filtered. A Network is safe for concurrent use.
// Close removes everything it created; CleanupStale removes what a crashed
// run left behind.
type Network struct {
	prefix string
	subnet netip.Prefix
	bridge string
	gw     netip.Addr

	mu     sync.Mutex
	next   netip.Addr
	hosts  []*Host
	faults map[routeFault]int // reference counts of installed routes and rules
	closed bool
}

// fault is one installed route or rule in a host namespace.
type routeFault struct {
	ns   string
	kind string // "route" (blackhole to addr) or "rule" (drop from addr)
	addr netip.Addr
}

// Host is one network namespace of a Network with one address.
type Host struct {
	Name string     // e.g. "e1", "g3"
	NS   string     // namespace name, "<prefix>-<Name>"
	Addr netip.Addr // address on the bridge
	Link string     // root end of the veth, a bridge port; equal to NS
}

// NewNetwork creates the bridge "<prefix>" with the last address of subnet
// and returns a Network without hosts. prefix must be 1 to 10 lower-case
// letters or digits; CleanupStale finds a crashed run's leftovers by it,
// so concurrent runs need prefixes that do not start one another. subnet must be IPv4 with room
// for the hosts (a /24 holds 253). It returns ErrSubnetInUse (wrapped) when
// the root namespace already has an address in subnet, and an error when the
// bridge exists or `ip` fails; on error nothing is left behind. It needs root
// (CAP_NET_ADMIN) and iproute2.
func NewNetwork(prefix string, subnet netip.Prefix) (*Network, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	subnet = subnet.Masked()
	if !subnet.Addr().Is4() || subnet.Bits() < 8 || subnet.Bits() > 29 {
		return nil, fmt.Errorf("chaos: subnet %v: want an IPv4 prefix between /8 and /29", subnet)
	}
	if err := checkSubnetFree(subnet); err != nil {
		return nil, err
	}
	n := &Network{
		prefix: prefix,
		subnet: subnet,
		bridge: prefix,
		gw:     lastHost(subnet),
		next:   subnet.Addr().Next(),
		faults: make(map[routeFault]int),
	}
	if err := run("ip", "link", "add", n.bridge, "type", "bridge"); err != nil {
		return nil, err
	}
	if err := runAll(
		[]string{"ip", "addr", "add", netip.PrefixFrom(n.gw, subnet.Bits()).String(), "dev", n.bridge},
		[]string{"ip", "link", "set", n.bridge, "up"},
	); err != nil {
		_ = run("ip", "link", "del", n.bridge)
		return nil, err
	}
	return n, nil
}

func checkPrefix(prefix string) error {
	if prefix == "" || len(prefix) > 10 {
		return fmt.Errorf("chaos: prefix %q: want 1 to 10 characters", prefix)
	}
	for _, c := range prefix {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return fmt.Errorf("chaos: prefix %q: want only a-z and 0-9", prefix)
		}
	}
	return nil
}

// checkSubnetFree reports ErrSubnetInUse when a root-namespace interface has
// an address inside subnet or a subnet that overlaps it.
func checkSubnetFree(subnet netip.Prefix) error {
	ifaces, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("chaos: list interfaces: %w", err)
	}
	for _, ifc := range ifaces {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			p, err := netip.ParsePrefix(ipn.String())
			if err != nil || !p.Addr().Is4() {
				continue
			}
			if p.Overlaps(subnet) {
				return fmt.Errorf("%w: %v overlaps %v on %s; pick another subnet or remove leftovers with CleanupStale",
					ErrSubnetInUse, p, subnet, ifc.Name)
			}
		}
	}
	return nil
}

func lastHost(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= 1<<(32-p.Bits()) - 1 // broadcast
	v--
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Prefix returns the name prefix given to NewNetwork.
func (n *Network) Prefix() string { return n.prefix }

// Subnet returns the test subnet.
func (n *Network) Subnet() netip.Prefix { return n.subnet }

// Gateway returns the bridge's address, through which the root namespace
// reaches the hosts.
func (n *Network) Gateway() netip.Addr { return n.gw }

// Hosts returns the hosts added so far, in order.
func (n *Network) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.hosts...)
}

// AddHost creates the namespace "<prefix>-<name>", a veth from the bridge
// into it, and gives it the next free address of the subnet (the first host
// gets .1). Loopback is brought up. The namespace's local routing rule is
// moved from preference 0 to 100 so that DropFrom can filter incoming
// packets before local delivery. name must be letters or digits and keep
// "<prefix>-<name>" within 15 characters. It returns an error when the
// network is closed, the subnet is full, or `ip` fails; on error the
// half-made host is removed.
func (n *Network) AddHost(name string) (*Host, error) {
	if name == "" {
		return nil, errors.New("chaos: empty host name")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return nil, fmt.Errorf("chaos: host name %q: want only letters and digits", name)
		}
	}
	ns := n.prefix + "-" + name
	if len(ns) > maxLinkName {
		return nil, fmt.Errorf("chaos: host name %q: %q is longer than %d characters; use a shorter prefix or name",
			name, ns, maxLinkName)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("chaos: network closed")
	}
	for _, h := range n.hosts {
		if h.Name == name {
			return nil, fmt.Errorf("chaos: host %q exists", name)
		}
	}
	addr := n.next
	if !n.subnet.Contains(addr) || addr == n.gw {
		return nil, fmt.Errorf("chaos: subnet %v is full", n.subnet)
	}
	h := &Host{Name: name, NS: ns, Addr: addr, Link: ns}
	if err := run("ip", "netns", "add", ns); err != nil {
		return nil, err
	}
	err := runAll(
		[]string{"ip", "link", "add", h.Link, "type", "veth", "peer", "name", "eth0", "netns", ns},
		[]string{"ip", "link", "set", h.Link, "master", n.bridge, "up"},
		[]string{"ip", "-n", ns, "addr", "add", netip.PrefixFrom(addr, n.subnet.Bits()).String(), "dev", "eth0"},
		[]string{"ip", "-n", ns, "link", "set", "eth0", "up"},
		[]string{"ip", "-n", ns, "link", "set", "lo", "up"},
		[]string{"ip", "-n", ns, "rule", "add", "pref", "100", "lookup", "local"},
		[]string{"ip", "-n", ns, "rule", "del", "pref", "0", "lookup", "local"},
	)
	if err != nil {
		_ = run("ip", "link", "del", h.Link)
		_ = run("ip", "netns", "del", ns)
		return nil, err
	}
	n.next = addr.Next()
	n.hosts = append(n.hosts, h)
	return h, nil
}

// Close kills every process still running in the hosts' namespaces
// (SIGKILL, found with `ip netns pids`), then removes the namespaces (with
// their routes and rules), the veths and the bridge. It is idempotent and
// keeps going after a failure; it returns all failures joined.
func (n *Network) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	var errs []error
	for _, h := range n.hosts {
		errs = append(errs, removeNamespace(h.NS))
		errs = append(errs, deleteLink(h.Link))
	}
	errs = append(errs, deleteLink(n.bridge))
	n.faults = map[routeFault]int{}
	return errors.Join(errs...)
}

// CleanupStale removes what runs with names starting with prefix left
// behind: it kills the processes inside every namespace whose name starts
// with prefix, deletes those namespaces, and deletes every link of the root
// namespace whose name starts with prefix (veths and bridges), and removes
// the temporary directories TempDirPrefix+prefix+"*" in os.TempDir() (the
// data of registry ensembles started without a directory). prefix must be
// non-empty. It returns all failures joined.
func CleanupStale(prefix string) error {
	if prefix == "" {
		return errors.New("chaos: CleanupStale needs a non-empty prefix")
	}
	var errs []error
	nss, err := listNamespaces()
	if err != nil {
		errs = append(errs, err)
	}
	for _, ns := range nss {
		if strings.HasPrefix(ns, prefix) {
			errs = append(errs, removeNamespace(ns))
		}
	}
	links, err := listLinks()
	if err != nil {
		errs = append(errs, err)
	}
	// Veths first (deleting one end removes both), then bridges.
	var bridges []string
	for _, l := range links {
		if !strings.HasPrefix(l.name, prefix) {
			continue
		}
		if l.bridge {
			bridges = append(bridges, l.name)
			continue
		}
		errs = append(errs, deleteLink(l.name))
	}
	for _, b := range bridges {
		errs = append(errs, deleteLink(b))
	}
	if entries, err := os.ReadDir(os.TempDir()); err == nil {
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), TempDirPrefix+prefix) {
				errs = append(errs, os.RemoveAll(filepath.Join(os.TempDir(), e.Name())))
			}
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists the namespaces and the root-namespace links whose names
// start with prefix: what Close or CleanupStale should have removed.
func Leftovers(prefix string) ([]string, error) {
	nss, err := listNamespaces()
	if err != nil {
		return nil, err
	}
	links, err := listLinks()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range nss {
		if strings.HasPrefix(ns, prefix) {
			out = append(out, "namespace "+ns)
		}
	}
	for _, l := range links {
		if strings.HasPrefix(l.name, prefix) {
			out = append(out, "link "+l.name)
		}
	}
	return out, nil
}

// removeNamespace kills the processes in ns, waits briefly for them to go
// and deletes ns. A missing namespace is not an error.
func removeNamespace(ns string) error {
	if _, err := os.Stat("/run/netns/" + ns); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for range 50 {
		pids := namespacePIDs(ns)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return run("ip", "netns", "del", ns)
}

func namespacePIDs(ns string) []int {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

func listNamespaces() ([]string, error) {
	entries, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("chaos: list namespaces: %w", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}

type linkInfo struct {
	name   string
	bridge bool
}

func listLinks() ([]linkInfo, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("chaos: list links: %w", err)
	}
	var links []linkInfo
	for _, ifc := range ifaces {
		_, err := os.Stat("/sys/class/net/" + ifc.Name + "/bridge")
		links = append(links, linkInfo{name: ifc.Name, bridge: err == nil})
	}
	return links, nil
}

// deleteLink deletes a root-namespace link. A link that is gone, or goes
// away meanwhile (the kernel removes a veth asynchronously once its peer's
// namespace is destroyed), is not an error.
func deleteLink(name string) error {
	if !linkExists(name) {
		return nil
	}
	if err := run("ip", "link", "del", name); err != nil && linkExists(name) {
		return err
	}
	return nil
}

func linkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}

// Command returns a command that runs name inside the host's namespace
// through `ip netns exec` (which execs, so the process id is the program's).
// The process leads its own process group, so Kill(-pid) reaches its whole
// tree, and gets SIGKILL when the calling thread of this process dies
// (Pdeathsig), so a crashed harness does not leave it running. When ctx is
// done the whole group is killed with SIGKILL.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
	cmd.SysProcAttr = groupWithDeathSignal()
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// Dial connects from inside the host's namespace: the socket is created on
// a thread that has joined the namespace, so the connection is subject to
// the host's routes and faults. ctx bounds the dial only.
func (h *Host) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	var c net.Conn
	err := h.do(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, address)
		return err
	})
	return c, err
}

// Listen opens a listener inside the host's namespace, like net.Listen.
func (h *Host) Listen(network, address string) (net.Listener, error) {
	var l net.Listener
	err := h.do(func() error {
		var err error
		l, err = net.Listen(network, address)
		return err
	})
	return l, err
}

// do runs f on a fresh OS thread that has joined the host's network
// namespace. The thread is never returned to the scheduler: the goroutine
// exits while still locked, so the Go runtime terminates the thread.
func (h *Host) do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread dies with this goroutine.
		if err := enter(h.NS); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// Blackhole adds `ip route add blackhole <to>/32` in in's namespace: packets
// that in sends to `to` are dropped. Note the kernel's semantics: a new
// connection from in to `to` fails at once with EINVAL ("invalid argument"),
// while packets of established connections vanish silently. Use DropFrom for
// a drop that is silent for everybody. Blackholes are reference counted, so
// overlapping faults compose; undo removes this one and is idempotent.
func (n *Network) Blackhole(in *Host, to netip.Addr) (undo func() error, err error) {
	return n.install(routeFault{ns: in.NS, kind: "route", addr: to})
}

// DropFrom adds a routing rule in in's namespace that silently drops every
// packet arriving from `from` (`ip rule add pref 10 from <from> iif eth0
// blackhole`). Packets that in sends to `from` still leave; the sender on
// the other side sees no answers, and in sees nothing. Rules are reference
// counted; undo removes this one and is idempotent.
func (n *Network) DropFrom(in *Host, from netip.Addr) (undo func() error, err error) {
	return n.install(routeFault{ns: in.NS, kind: "rule", addr: from})
}

// Partition cuts a and b apart in both directions: each drops what arrives
// from the other (DropFrom in both namespaces), so connections in either
// direction time out silently, new and established alike. heal restores the
// link (unless another fault still cuts it) and is idempotent.
func (n *Network) Partition(a, b *Host) (heal func() error, err error) {
	u1, err := n.DropFrom(a, b.Addr)
	if err != nil {
		return nil, err
	}
	u2, err := n.DropFrom(b, a.Addr)
	if err != nil {
		return nil, errors.Join(err, u1())
	}
	return func() error { return errors.Join(u2(), u1()) }, nil
}

// DropReplies makes the path from each server to client lossy in one
// direction: client drops everything arriving from the servers, so its
// requests (and TCP SYNs) reach the servers and are processed there, but the
// replies never arrive. New connections from client to the servers time out
// in SYN-SENT; established ones stall with unacknowledged data. heal undoes
// it and is idempotent.
func (n *Network) DropReplies(servers []*Host, client *Host) (heal func() error, err error) {
	var undos []func() error
	healAll := func() error {
		var errs []error
		for i := len(undos) - 1; i >= 0; i-- {
			errs = append(errs, undos[i]())
		}
		return errors.Join(errs...)
	}
	for _, s := range servers {
		u, err := n.DropFrom(client, s.Addr)
		if err != nil {
			return nil, errors.Join(err, healAll())
		}
		undos = append(undos, u)
	}
	return healAll, nil
}

func (f routeFault) args(op string) []string {
	switch f.kind {
	case "route":
		return []string{"ip", "-n", f.ns, "route", op, "blackhole", netip.PrefixFrom(f.addr, 32).String()}
	default:
		return []string{"ip", "-n", f.ns, "rule", op, "pref", "10", "from", netip.PrefixFrom(f.addr, 32).String(),
			"iif", "eth0", "blackhole"}
	}
}

func (n *Network) install(f routeFault) (func() error, error) {
	if !f.addr.Is4() {
		return nil, fmt.Errorf("chaos: %v: want an IPv4 address", f.addr)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("chaos: network closed")
	}
	if n.faults[f] == 0 {
		if err := run(f.args("add")...); err != nil {
			return nil, err
		}
	}
	n.faults[f]++
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() { err = n.uninstall(f) })
		return err
	}, nil
}

func (n *Network) uninstall(f routeFault) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.faults[f] == 0 {
		return nil // the namespace and its routes are gone
	}
	n.faults[f]--
	if n.faults[f] > 0 {
		return nil
	}
	delete(n.faults, f)
	return run(f.args("del")...)
}

// run runs a command and returns an error with its output when it fails.
func run(args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("chaos: %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

func runAll(cmds ...[]string) error {
	for _, c := range cmds {
		if err := run(c...); err != nil {
			return err
		}
	}
	return nil
}
