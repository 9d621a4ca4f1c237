package embedded

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
)

// The tests named TestHostile... use only what a local process has: the
// client port and, for the owner, the files in the data directory.

// fileCredentials reads the credentials file of dir as a client would.
func fileCredentials(t *testing.T, dir string) (user, password string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "credentials.json"))
	if err != nil {
		t.Fatalf("credentials file: %v", err)
	}
	var c struct{ Username, Password string }
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("credentials file: %v", err)
	}
	return c.Username, c.Password
}

// client returns an etcd client on eps with the given user (none when
// empty), closed at the end of the test.
func client(t *testing.T, eps []string, user, password string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 20 * time.Second, Username: user, Password: password, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client (user %q): %v", user, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ownerClient returns a client on eps with the credentials in dir, as the
// owner of the data directory has them.
func ownerClient(t *testing.T, dir string, eps []string) *clientv3.Client {
	t.Helper()
	user, password := fileCredentials(t, dir)
	return client(t, eps, user, password)
}

// rootClient returns a client with the root credentials of s.
func rootClient(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	return client(t, s.Endpoints(), s.Credentials().Username, s.Credentials().Password)
}

// startDir starts a server on dir with a free client port.
func startDir(t *testing.T, dir string) *Server {
	t.Helper()
	return start(t, Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Namespace: "governance_ds"})
}

// refused asserts that a client without credentials can neither write nor
// read through eps.
func refused(t *testing.T, eps []string) {
	t.Helper()
	anon := client(t, eps, "", "")
	c := testenv.Context(t)
	if _, err := anon.Put(c, "governance_ds/states/cluster_state", "UNAVAILABLE"); err == nil {
		t.Fatal("a client without credentials wrote governance_ds/states/cluster_state")
	} else {
		t.Logf("put without credentials: %v", err)
	}
	if resp, err := anon.Get(c, "governance_ds/", clientv3.WithPrefix()); err == nil {
		t.Fatalf("a client without credentials read %d keys", len(resp.Kvs))
	}
	if _, err := anon.Delete(c, "governance_ds/", clientv3.WithPrefix()); err == nil {
		t.Fatal("a client without credentials deleted keys")
	}
	if _, err := anon.AuthDisable(c); err == nil {
		t.Fatal("a client without credentials switched authentication off")
	}
}

func TestHostileEmbeddedRefusesClientsWithoutCredentials(t *testing.T) {
	dir := t.TempDir()
	s := startDir(t, dir)
	eps := s.Endpoints()
	refused(t, eps)

	// The owner's credentials work; the value the anonymous client tried to
	// overwrite is untouched.
	root := ownerClient(t, dir, eps)
	c := testenv.Context(t)
	if _, err := root.Put(c, "governance_ds/states/cluster_state", "OK"); err != nil {
		t.Fatalf("put with the credentials: %v", err)
	}
	refused(t, eps)
	if resp, err := root.Get(c, "governance_ds/states/cluster_state"); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "OK" {
		t.Fatalf("cluster_state = %v, %v; want OK", resp, err)
	}

	// Only the owner may read the credentials; the password has 256 bits.
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "credentials.json"): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
	if user, pw := fileCredentials(t, dir); user != "root" || len(pw) != 64 || strings.Trim(pw, "0123456789abcdef") != "" {
		t.Errorf("credentials: user %q, password of %d characters; want root and 64 hex digits", user, len(pw))
	}
	// No peer port: nothing but the client port listens.
	if n := len(s.Etcd().Peers); n != 0 {
		t.Errorf("%d peer listeners open by default, want none", n)
	}
}

// oldDataDir writes a data directory as a server without authentication
// did, holding governance_ds/metadata/db1/active_version = 0.
func oldDataDir(t *testing.T, dir string) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Name = DefaultName
	u, _ := url.Parse(freeURL(t))
	p, _ := url.Parse("http://127.0.0.1:2380")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*u}, []url.URL{*u}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = nil, []url.URL{*p}
	cfg.InitialCluster = DefaultName + "=" + p.String()
	cfg.InitialClusterToken = "shardkeeper-" + DefaultName
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	<-e.Server.ReadyNotify()
	anon := client(t, []string{u.String()}, "", "")
	if _, err := anon.Put(testenv.Context(t), "governance_ds/metadata/db1/active_version", "0"); err != nil {
		t.Fatal(err)
	}
	_ = anon.Close()
}

func TestHostileEmbeddedMigratesDataDirWithoutAuth(t *testing.T) {
	dir := t.TempDir()
	oldDataDir(t, dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startDir(t, dir)
	refused(t, s.Endpoints())
	// Nothing was lost, and the owner reads it with the new credentials.
	resp, err := ownerClient(t, dir, s.Endpoints()).Get(testenv.Context(t), "governance_ds/metadata/db1/active_version")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "0" {
		t.Fatalf("after migration: %v, %v; want the value written before", resp, err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("data dir mode after migration: %v, %v; want 0700", st.Mode().Perm(), err)
	}
}

func TestHostileAuthDisabledIsTurnedBackOn(t *testing.T) {
	dir := t.TempDir()
	s := startDir(t, dir)
	eps := s.Endpoints()
	root := ownerClient(t, dir, eps)

	// Switched off while the server runs: back on within seconds.
	if _, err := root.AuthDisable(testenv.Context(t)); err != nil {
		t.Fatalf("auth disable with the root password: %v", err)
	}
	anon := client(t, eps, "", "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := anon.Get(testenv.Context(t), "governance_ds/states/cluster_state")
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("authentication still off 10s after a client switched it off")
		}
		time.Sleep(100 * time.Millisecond)
	}
	refused(t, eps)

	// Switched off, then the server stopped before it noticed: on again
	// before the client port opens on the next start.
	if _, err := root.AuthDisable(testenv.Context(t)); err != nil {
		t.Fatalf("auth disable with the root password: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = startDir(t, dir)
	refused(t, s.Endpoints())
	if _, err := ownerClient(t, dir, s.Endpoints()).Put(testenv.Context(t), "governance_ds/states/cluster_state", "OK"); err != nil {
		t.Fatalf("put with the credentials after restart: %v", err)
	}
}

// A credentials file replaced by the owner, or readable by others, sets
// the root password at the next start; the old password stops working.
func TestCredentialsFileRotatesPassword(t *testing.T) {
	dir := t.TempDir()
	s := startDir(t, dir)
	_, first := fileCredentials(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(CredentialsPath(dir), []byte(`{"username":"root","password":"chosen-by-the-owner"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s = startDir(t, dir)
	client(t, s.Endpoints(), "root", "chosen-by-the-owner")
	if c, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 20 * time.Second, Username: "root", Password: first, Logger: zap.NewNop()}); err == nil {
		c.Close()
		t.Fatal("the replaced password still works")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.Chmod(CredentialsPath(dir), 0o644); err != nil {
		t.Fatal(err)
	}
	s = startDir(t, dir)
	if _, pw := fileCredentials(t, dir); pw == "chosen-by-the-owner" {
		t.Fatal("a credentials file readable by others was kept")
	}
	if st, err := os.Stat(CredentialsPath(dir)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new credentials file mode: %v", err)
	}
	ownerClient(t, dir, s.Endpoints())
	refused(t, s.Endpoints())
}

func TestLoadCredentialsErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadCredentials(dir); !os.IsNotExist(err) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	for content, want := range map[string]string{
		"not json":                "invalid character",
		`{"username":"root"}`:     "want {",
		strings.Repeat(" ", 5000): "larger than",
	} {
		if err := os.WriteFile(CredentialsPath(dir), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadCredentials(dir); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), CredentialsPath(dir)) {
			t.Errorf("LoadCredentials(%.20q) = %v, want an error naming the file and %q", content, err, want)
		}
	}
	_ = os.Remove(CredentialsPath(dir))
	if err := os.Mkdir(CredentialsPath(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCredentials(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
}

// etcd's simple auth tokens expire after AuthTokenTTL without use; the
// repository's watches, new watches, sessions and plain requests go on
// across the expiry.
func TestWatchAcrossTokenRenewal(t *testing.T) {
	dir := t.TempDir()
	s := start(t, Config{Dir: dir, ClientURL: "http://127.0.0.1:0", AuthTokenTTL: time.Second})
	creds := s.Credentials()
	r, err := etcd.Open(testenv.Context(t), etcd.Config{Endpoints: s.Endpoints(), Namespace: "governance_ds", Username: creds.Username, Password: creds.Password, DialTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := testenv.Context(t)
	_, first, err := r.Watch(c, "/a")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := r.NewSession(c, registry.SessionOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(c)
	time.Sleep(3 * time.Second) // the token expires
	if err := sess.PutEphemeral(c, "/nodes/x", []byte("1")); err != nil {
		t.Fatalf("ephemeral put after the token expired: %v", err)
	}
	_, second, err := r.Watch(c, "/b")
	if err != nil {
		t.Fatalf("watch after the token expired: %v", err)
	}
	if _, err := r.Put(c, "/a/x", []byte("1")); err != nil {
		t.Fatalf("put after the token expired: %v", err)
	}
	if _, err := r.Put(c, "/b/x", []byte("2")); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan registry.Event{"watch opened before the expiry": first, "watch opened after the expiry": second} {
		select {
		case ev := <-ch:
			if ev.Err != nil {
				t.Fatalf("%s: %v", name, ev.Err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no event", name)
		}
	}
	time.Sleep(3 * time.Second)
	select {
	case <-sess.Done():
		t.Fatalf("session ended across token expiries: %v", sess.Err())
	default:
	}
	if kv, err := r.Get(c, "/nodes/x"); err != nil || string(kv.Value) != "1" {
		t.Fatalf("ephemeral key after two token expiries: %v, %v", kv, err)
	}
}

// The running server lists its real client URLs in the data directory,
// for tools that reach it while it runs.
func TestClientURLsFile(t *testing.T) {
	dir := t.TempDir()
	s := startDir(t, dir)
	got, err := RunningClientURLs(dir)
	if err != nil || strings.Join(got, ",") != strings.Join(s.Endpoints(), ",") || strings.HasSuffix(got[0], ":0") {
		t.Fatalf("RunningClientURLs = %v, %v; want %v", got, err, s.Endpoints())
	}
	if _, err := RunningClientURLs(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("RunningClientURLs of an empty dir = %v, want os.ErrNotExist", err)
	}
}

// A data directory or credentials file of another user is not trusted:
// its owner could read or have chosen the password. (Changing owners needs
// root.)
func TestDataDirOwnedByAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chown needs root")
	}
	const nobody = 65534
	dir := t.TempDir()
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(testenv.Context(t), Config{Dir: dir, ClientURL: "http://127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Fatalf("Start on a directory of another user = %v, want an error saying so", err)
	}

	dir = t.TempDir()
	if err := os.WriteFile(CredentialsPath(dir), []byte(`{"username":"root","password":"planted"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(CredentialsPath(dir), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	s := startDir(t, dir)
	if _, pw := fileCredentials(t, dir); pw == "planted" {
		t.Fatal("a credentials file of another user was kept")
	}
	refused(t, s.Endpoints())
	ownerClient(t, dir, s.Endpoints())
}
