// Package config reads shardkeeper's configuration the ShardingSphere way: a
// conf directory with global.yaml (fallback server.yaml) whose `mode:`
// section says which registry to use. Errors name the file, line and field,
// and validation reports every problem at once.
package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/redact"
)

// Mode types, as ShardingSphere spells them.
const (
	ModeStandalone = "Standalone"
	ModeCluster    = "Cluster"
)

// Repository types. Matching is case-insensitive, as ShardingSphere's SPI
// lookup is; these are the canonical spellings.
const (
	RepositoryEtcd      = "etcd"
	RepositoryZooKeeper = "ZooKeeper"
	RepositoryEmbedded  = "Embedded"
)

// Defaults for repository props (ShardingSphere's where it has one).
const (
	DefaultNamespace            = "governance_ds"
	DefaultEtcdTTL              = 30 * time.Second
	DefaultZooKeeperTTL         = 60 * time.Second
	DefaultRetryInterval        = 500 * time.Millisecond
	DefaultMaxRetries           = 3
	DefaultOperationTimeout     = 500 * time.Millisecond
	DefaultConnectTimeout       = 5 * time.Second
	DefaultEmbeddedDataDir      = "shardkeeper-data"
	DefaultEmbeddedClientURL    = "http://127.0.0.1:2379"
	defaultGlobalFile           = "global.yaml"
	deprecatedGlobalFile        = "server.yaml"
	maxReasonableSessionSeconds = 24 * 3600
)

// Mode is the `mode:` section. With no section at all the mode is
// Standalone on the embedded registry.
type Mode struct {
	Type       string     // ModeStandalone or ModeCluster
	Repository Repository // where the cluster's state lives
}

// Repository says how to reach the registry. Props keep ShardingSphere's
// names in YAML (`namespace`, `server-lists`, `timeToLiveSeconds`,
// `retryIntervalMilliseconds`, `maxRetries`, `operationTimeoutMilliseconds`,
// `digest`) plus shardkeeper's own (`username`, `password`, `caFile`,
// `certFile`, `keyFile`, `connectTimeoutMilliseconds`, `layoutVersion`,
// `maxRequestBytes`, and for Embedded `dataDir`, `clientUrl`, `peerUrl`).
type Repository struct {
	Type             string        // RepositoryEtcd, RepositoryZooKeeper or RepositoryEmbedded
	Namespace        string        // key prefix (etcd) or root znode (ZooKeeper)
	ServerLists      []string      // etcd URLs or ZooKeeper host:port
	TimeToLive       time.Duration // session TTL: etcd lease, ZooKeeper session timeout
	RetryInterval    time.Duration
	MaxRetries       int
	OperationTimeout time.Duration
	ConnectTimeout   time.Duration // how long Open waits for the registry
	Digest           string        // ZooKeeper "user:password"
	Username         string        // etcd
	Password         string        // etcd
	CAFile           string        // etcd TLS
	CertFile         string        // etcd TLS client certificate
	KeyFile          string        // etcd TLS client key
	DataDir          string        // Embedded: where the embedded etcd keeps its data and credentials; etcd: read the credentials there
	ClientURL        string        // Embedded: where it listens for clients
	PeerURL          string        // Embedded: where it listens for etcd peers; empty (the default) opens no peer port
	// MaxRequestBytes is the server's request limit (prop
	// maxRequestBytes: etcd's --max-request-bytes, ZooKeeper's
	// jute.maxbuffer); 0 means the server's default (1.5 MiB, 1 MiB).
	// Writes beyond it are refused before they are sent.
	MaxRequestBytes int
	// Layout is the ShardingSphere release whose registry layout the node
	// writes (prop layoutVersion, such as 5.5.2; default
	// paths.DefaultLayout, the newest release's, until the node picks the
	// tree's). Every layout is read.
	Layout paths.Layout
	// LayoutSet is true when the configuration names layoutVersion; a
	// node without it picks the layout the registry's tree already has
	// (daemon.Start).
	LayoutSet bool
}

// DefaultMode is what a node runs with no configuration: Standalone on the
// embedded registry with its data in DefaultEmbeddedDataDir.
func DefaultMode() Mode {
	return Mode{Type: ModeStandalone, Repository: defaultRepository(RepositoryEmbedded)}
}

func defaultRepository(typ string) Repository {
	r := Repository{
		Type:             typ,
		Namespace:        DefaultNamespace,
		TimeToLive:       DefaultEtcdTTL,
		RetryInterval:    DefaultRetryInterval,
		MaxRetries:       DefaultMaxRetries,
		OperationTimeout: DefaultOperationTimeout,
		ConnectTimeout:   DefaultConnectTimeout,
		Layout:           paths.DefaultLayout,
	}
	switch typ {
	case RepositoryZooKeeper:
		r.TimeToLive = DefaultZooKeeperTTL
	case RepositoryEmbedded:
		r.DataDir = DefaultEmbeddedDataDir
		r.ClientURL = DefaultEmbeddedClientURL
		// No connection to retry: the props are refused, and not shown.
		r.RetryInterval, r.MaxRetries, r.OperationTimeout = 0, 0, 0
	}
	return r
}

// FindGlobalFile returns the path of global.yaml in dir, or of the
// deprecated server.yaml when only that exists. It returns an error naming
// both when neither exists, and one naming the file when it exists but
// cannot be used: a symbolic link loop, a link to nothing, no permission.
func FindGlobalFile(dir string) (string, error) {
	for _, name := range []string{defaultGlobalFile, deprecatedGlobalFile} {
		p := filepath.Join(dir, name)
		_, err := os.Stat(p)
		if err == nil {
			return p, nil
		}
		if errors.Is(err, syscall.ELOOP) {
			return "", fmt.Errorf("%s is a symbolic link loop (it resolves to itself): point it at a regular file", p)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if target, lerr := os.Readlink(p); lerr == nil {
			return "", fmt.Errorf("%s is a symbolic link to %s, which does not exist", p, target)
		}
	}
	return "", fmt.Errorf("conf dir %s has neither %s nor %s", dir, defaultGlobalFile, deprecatedGlobalFile)
}

// LoadMode reads the `mode:` section of the global file in the conf dir
// (see FindGlobalFile). A file without the section yields DefaultMode. The
// file is read as ReadFile does (a regular file of at most MaxFileSize
// bytes); ctx bounds the read.
func LoadMode(ctx context.Context, dir string) (Mode, error) {
	path, err := FindGlobalFile(dir)
	if err != nil {
		return Mode{}, err
	}
	data, err := ReadFile(ctx, path, MaxFileSize)
	if err != nil {
		return Mode{}, err
	}
	return ParseMode(path, data)
}

// ParseMode reads the `mode:` section from the YAML document data; file
// names the source in errors. It reports every problem at once, each as
// "file:line: field: what is wrong".
func ParseMode(file string, data []byte) (Mode, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Mode{}, fmt.Errorf("%s: %w", file, err)
	}
	root := documentRoot(&doc)
	if root == nil {
		return DefaultMode(), nil
	}
	if root.Kind != yaml.MappingNode {
		return Mode{}, fmt.Errorf("%s:%d: the document must be a mapping", file, root.Line)
	}
	modeNode := mapValue(root, "mode")
	if modeNode == nil || modeNode.Tag == "!!null" {
		return DefaultMode(), nil
	}
	p := problems{file: file}
	m := Mode{Type: ModeStandalone}
	if modeNode.Kind != yaml.MappingNode {
		p.add(modeNode, "mode", "must be a mapping with type and repository")
		return Mode{}, p.err()
	}
	if t := mapValue(modeNode, "type"); t != nil {
		switch t.Value {
		case ModeStandalone, ModeCluster:
			m.Type = t.Value
		default:
			p.add(t, "mode.type", fmt.Sprintf("%q is not a mode (use Standalone or Cluster)", t.Value))
		}
	}
	repoNode := mapValue(modeNode, "repository")
	if repoNode == nil {
		if m.Type == ModeCluster {
			p.add(modeNode, "mode.repository", "Cluster persist repository configuration is required.")
		}
		m.Repository = defaultRepository(RepositoryEmbedded)
		return m, p.err()
	}
	m.Repository = parseRepository(&p, repoNode, yamlFields)
	return m, p.err()
}

// fieldNames say how errors name the repository's fields: as YAML paths
// or as command-line flags.
type fieldNames struct{ typ, props, prop string }

var (
	yamlFields = fieldNames{typ: "mode.repository.type", props: "mode.repository.props", prop: "mode.repository.props."}
	flagFields = fieldNames{typ: "--repository-type", props: "flags", prop: "--"}
)

// RepositoryFromFlags builds a repository config from a type and props
// given on the command line (props named as in YAML, such as "namespace"
// and "server-lists"), validated like the YAML section; errors name the
// flags (--repository-type, --server-lists, ...).
func RepositoryFromFlags(typ string, props map[string]string) (Repository, error) {
	node := &yaml.Node{Kind: yaml.MappingNode}
	node.Content = append(node.Content, scalar("type"), scalar(typ))
	pm := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range sortedKeys(props) {
		pm.Content = append(pm.Content, scalar(k), scalar(props[k]))
	}
	node.Content = append(node.Content, scalar("props"), pm)
	p := problems{}
	r := parseRepository(&p, node, flagFields)
	return r, p.err()
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func parseRepository(p *problems, node *yaml.Node, f fieldNames) Repository {
	typNode := mapValue(node, "type")
	typ := ""
	if typNode != nil {
		typ = canonicalRepositoryType(typNode.Value)
		if typ == "" {
			p.add(typNode, f.typ, fmt.Sprintf("%q is not a repository type (use etcd, ZooKeeper or Embedded)", typNode.Value))
		}
	} else {
		p.add(node, f.typ, "missing (use etcd, ZooKeeper or Embedded)")
	}
	namedEmbedded := typ == RepositoryEmbedded
	if typ == "" {
		typ = RepositoryEmbedded
	}
	r := defaultRepository(typ)
	props := mapValue(node, "props")
	if props == nil {
		if typ != RepositoryEmbedded {
			p.add(node, f.props, "missing: namespace and server-lists are required")
		}
		return r
	}
	if props.Kind != yaml.MappingNode {
		p.add(props, f.props, "must be a mapping")
		return r
	}
	seen := map[string]bool{}
	keyNodes := map[string]*yaml.Node{}
	var serversNode *yaml.Node
	for i := 0; i+1 < len(props.Content); i += 2 {
		k, v := props.Content[i], props.Content[i+1]
		field := f.prop + k.Value
		seen[k.Value] = true
		keyNodes[k.Value] = k
		switch k.Value {
		case "namespace":
			r.Namespace = v.Value
			if err := validateNamespace(v.Value); err != nil {
				p.add(v, field, err.Error())
			}
		case "server-lists":
			serversNode = v
			r.ServerLists = nil
			for _, s := range strings.Split(v.Value, ",") {
				if s = strings.TrimSpace(s); s != "" {
					r.ServerLists = append(r.ServerLists, s)
				}
			}
		case "timeToLiveSeconds":
			r.TimeToLive = p.seconds(v, field, 1, maxReasonableSessionSeconds)
		case "retryIntervalMilliseconds":
			r.RetryInterval = p.millis(v, field, 1)
		case "maxRetries":
			r.MaxRetries = p.integer(v, field, 0, 1000)
		case "operationTimeoutMilliseconds":
			r.OperationTimeout = p.millis(v, field, 1)
		case "connectTimeoutMilliseconds":
			r.ConnectTimeout = p.millis(v, field, 1)
		case "maxRequestBytes":
			r.MaxRequestBytes = p.integer(v, field, 64<<10, 1<<30)
		case "connectionTimeout":
			// etcd's prop is defined but unused upstream; accepted and ignored.
		case "digest":
			r.Digest = v.Value
			if v.Value != "" && !strings.Contains(v.Value, ":") {
				p.add(v, field, "must be user:password")
			}
		case "username":
			r.Username = v.Value
		case "password":
			r.Password = v.Value
		case "caFile":
			r.CAFile = v.Value
		case "certFile":
			r.CertFile = v.Value
		case "keyFile":
			r.KeyFile = v.Value
		case "dataDir":
			r.DataDir = v.Value
		case "clientUrl":
			r.ClientURL = v.Value
		case "peerUrl":
			r.PeerURL = v.Value
		case "layoutVersion":
			l, err := paths.ParseLayout(v.Value)
			if err != nil {
				p.add(v, field, err.Error())
			}
			r.Layout, r.LayoutSet = l, true
		default:
			p.add(k, field, "unknown repository prop")
		}
	}
	if namedEmbedded {
		// The embedded etcd runs in the node's process: there is no
		// connection to retry or time out, so these props could not act.
		for _, name := range []string{"retryIntervalMilliseconds", "maxRetries", "operationTimeoutMilliseconds"} {
			if k := keyNodes[name]; k != nil {
				p.add(k, f.prop+name, "has no effect on the Embedded repository (its etcd runs inside the node: no connection to retry); remove it")
			}
		}
	}
	if typ != RepositoryEmbedded {
		if !seen["namespace"] {
			p.add(props, f.prop+"namespace", "required")
		}
		if len(r.ServerLists) == 0 {
			p.add(props, f.prop+"server-lists", "required (etcd: http://host:2379[,...]; ZooKeeper: host:2181[,...])")
		}
	}
	for _, s := range r.ServerLists {
		var err error
		switch typ {
		case RepositoryEtcd:
			err = checkEtcdEndpoint(s)
		case RepositoryZooKeeper:
			err = checkZooKeeperServer(s)
		}
		if err != nil {
			p.add(serversNode, f.prop+"server-lists", err.Error())
		}
	}
	if typ == RepositoryEtcd {
		if (r.CertFile == "") != (r.KeyFile == "") {
			p.add(props, f.prop+"certFile", "certFile and keyFile go together")
		}
	}
	return r
}

// checkEtcdEndpoint checks that raw is an etcd client URL,
// http[s]://host:port with nothing after the port. It only parses: it never
// resolves the host.
func checkEtcdEndpoint(raw string) error {
	s := redact.URL(raw)
	if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
		return fmt.Errorf("etcd endpoint %q must be a URL such as http://%s", s, s)
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("etcd endpoint %q is not a valid URL (%v): want http[s]://host:port", s, err)
	}
	switch {
	case u.User != nil:
		return fmt.Errorf("etcd endpoint %q must not hold credentials: use the username and password props", s)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("etcd endpoint %q must end at the port (http[s]://host:port)", s)
	case u.Port() == "":
		return fmt.Errorf("etcd endpoint %q has no port: want http[s]://host:port, such as %s:2379", s, strings.TrimSuffix(s, "/"))
	}
	return checkHostPort(s, u.Hostname(), u.Port())
}

// checkZooKeeperServer checks that raw is host[:port] (port 2181 when
// omitted; an IPv6 address in brackets). It only parses: it never resolves
// the host.
func checkZooKeeperServer(raw string) error {
	s := redact.URL(raw)
	if strings.Contains(raw, "://") {
		return fmt.Errorf("ZooKeeper server %q must be host:port, not a URL", s)
	}
	host, port := raw, ""
	if strings.HasPrefix(raw, "[") || strings.Count(raw, ":") == 1 {
		var err error
		if host, port, err = net.SplitHostPort(raw); err != nil {
			var ae *net.AddrError
			if errors.As(err, &ae) {
				err = errors.New(ae.Err)
			}
			return fmt.Errorf("ZooKeeper server %q is not host:port (%v)", s, err)
		}
		if port == "" {
			return fmt.Errorf("ZooKeeper server %q has an empty port: want host:port, such as %s2181", s, s)
		}
	} else if strings.Contains(raw, ":") {
		return fmt.Errorf("ZooKeeper server %q is not host:port: write an IPv6 address in brackets, such as [::1]:2181", s)
	}
	return checkHostPort(s, host, port)
}

// checkHostPort checks the host (an IP address or a DNS name) and the port
// (empty, or a number in [1, 65535]) of server s.
func checkHostPort(s, host, port string) error {
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q must be a number in [1, 65535]", s, port)
		}
	}
	if host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if !validHostName(host) {
		return fmt.Errorf("%q: host %q is neither an IP address nor a valid host name", s, host)
	}
	return nil
}

// validHostName reports whether h is a DNS host name: dot-separated labels
// of letters, digits, '-' and '_', each 1 to 63 characters, not starting or
// ending with '-', 253 characters at most.
func validHostName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				return false
			}
		}
	}
	return true
}

// validateNamespace refuses namespaces that would escape or break the key
// space: empty, containing "..", "//", whitespace or control characters.
func validateNamespace(ns string) error {
	switch {
	case ns == "":
		return errors.New("must not be empty")
	case strings.Contains(ns, ".."):
		return errors.New(`must not contain ".."`)
	case strings.Contains(ns, "//"):
		return errors.New(`must not contain "//"`)
	case strings.HasSuffix(ns, "/"):
		return errors.New(`must not end with "/"`)
	}
	for _, c := range ns {
		if c <= ' ' || c == 0x7f {
			return fmt.Errorf("must not contain space or control character %U", c)
		}
	}
	return nil
}

// canonicalRepositoryType maps a case-insensitive type name to its
// canonical spelling, or "" if it is unknown.
func canonicalRepositoryType(s string) string {
	for _, t := range []string{RepositoryEtcd, RepositoryZooKeeper, RepositoryEmbedded} {
		if strings.EqualFold(s, t) {
			return t
		}
	}
	return ""
}

// problems collects validation errors with their positions.
type problems struct {
	file string
	errs []error
}

func (p *problems) add(n *yaml.Node, field, msg string) {
	if p.file == "" {
		p.errs = append(p.errs, fmt.Errorf("%s: %s", field, msg))
		return
	}
	p.errs = append(p.errs, fmt.Errorf("%s:%d: %s: %s", p.file, n.Line, field, msg))
}

func (p *problems) err() error { return errors.Join(p.errs...) }

func (p *problems) integer(n *yaml.Node, field string, lo, hi int64) int {
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || v < lo || v > hi {
		p.add(n, field, fmt.Sprintf("%q must be an integer in [%d, %d]", n.Value, lo, hi))
		return int(lo)
	}
	return int(v)
}

func (p *problems) seconds(n *yaml.Node, field string, lo, hi int64) time.Duration {
	return time.Duration(p.integer(n, field, lo, hi)) * time.Second
}

func (p *problems) millis(n *yaml.Node, field string, lo int64) time.Duration {
	return time.Duration(p.integer(n, field, lo, 24*3600*1000)) * time.Millisecond
}

func documentRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return doc.Content[0]
	}
	return nil
}

// mapValue returns the value node of key in mapping m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
