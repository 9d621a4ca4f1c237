package main

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// hostileSecrets are the secrets the hostile tests hide in the registry;
// none may be printed unless asked with --show-secrets.
var hostileSecrets = []string{"p@ss", "ss@", "SecA", "SecB", "mfa1", "mfa2", "mfa3", "fieldpw", "poolpw", "rootpw", "shardpw",
	"aeskey123", "sm4key0123456789"}

// hostileValues are registry values as ShardingSphere stores them, by
// logical path: authority users, a storage unit with passwords in every
// form a JDBC URL allows, encryptors with AES and SM4 keys.
var hostileValues = map[string]string{
	"/rules/authority/versions/0": "users:\n- user: root@%\n  password: rootpw\n  admin: true\n- user: sharding\n  password: shardpw\n" +
		"privilege:\n  type: ALL_PERMITTED\n",
	"/metadata/secret_db/data_sources/units/ds_0/versions/0": "dataSourceClassName: com.zaxxer.hikari.HikariDataSource\n" +
		"url: jdbc:mysql://user:p@ss@127.0.0.1:3306/demo?sslpassword=SecA&password=SecB&password1=mfa1&password2=mfa2&password3=mfa3\n" +
		"username: root\npassword: fieldpw\ncustomPoolProps:\n  dataSource.password: poolpw\n",
	"/metadata/secret_db/rules/encrypt/encryptors/aes_encryptor/versions/0": "type: AES\nprops:\n  aes-key-value: aeskey123\n  digest-algorithm-name: SHA-1\n",
	"/metadata/secret_db/rules/encrypt/encryptors/sm4_encryptor/versions/0": "type: SM4\nprops:\n  sm4-key: sm4key0123456789\n  sm4-mode: ECB\n",
}

func assertHidden(t *testing.T, what, out string) {
	t.Helper()
	for _, w := range hostileSecrets {
		if strings.Contains(out, w) {
			t.Errorf("%s shows %q:\n%s", what, w, out)
		}
	}
}

// TestHostileRegistryGetHidesSecrets reads secrets back through `registry
// get` (value and -o json) and `registry watch` on real etcd and
// ZooKeeper: nothing secret is printed without --show-secrets, and
// `registry put` of a masked value is refused rather than replacing the
// secret with the mask.
func TestHostileRegistryGetHidesSecrets(t *testing.T) {
	for _, reg := range realRegistries(t) {
		t.Run(reg.name, func(t *testing.T) {
			ns := testenv.Namespace("sk_secrets_")
			flags := []string{"--repository-type", reg.typ, "--server-lists", reg.servers, "--namespace", ns}
			ctx := testenv.Context(t)
			repo, err := openFromFlags(ctx, &registryFlags{repositoryType: reg.typ, serverLists: reg.servers, namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			defer repo.Close()
			defer func() {
				for _, p := range []string{"/rules", "/metadata"} {
					_ = repo.Delete(context.Background(), p)
				}
			}()
			for k, v := range hostileValues {
				if _, err := repo.Put(ctx, k, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			for k, v := range hostileValues {
				out := mustRun(t, append([]string{"registry", "get", k}, flags...)...)
				assertHidden(t, "registry get "+k, out)
				if !strings.Contains(out, redact.Mask) {
					t.Errorf("registry get %s masked nothing:\n%s", k, out)
				}
				js := mustRun(t, append([]string{"registry", "get", k, "-o", "json"}, flags...)...)
				assertHidden(t, "registry get -o json "+k, js)
				if got := mustRun(t, append([]string{"registry", "get", k, "--show-secrets"}, flags...)...); got != v+"\n" {
					t.Errorf("registry get %s --show-secrets = %q, want %q", k, got, v)
				}
				// Pasting the masked value back is refused; the secret stays.
				if _, err := run(t, ctx, append([]string{"registry", "put", k, out}, flags...)...); err == nil || !strings.Contains(err.Error(), "--show-secrets") {
					t.Errorf("registry put of the masked %s: %v, want a refusal naming --show-secrets", k, err)
				}
				if kv, err := repo.Get(ctx, k); err != nil || string(kv.Value) != v {
					t.Errorf("%s after the refused put = %q, %v", k, kv.Value, err)
				}
			}
			// The authority users keep their names; JSON output stays JSON.
			var js struct{ Value string }
			if err := json.Unmarshal([]byte(mustRun(t, append([]string{"registry", "get", "/rules/authority/versions/0", "-o", "json"}, flags...)...)), &js); err != nil ||
				!strings.Contains(js.Value, "root@%") || !strings.Contains(js.Value, "ALL_PERMITTED") {
				t.Errorf("registry get -o json of the authority rule = %+v, %v", js, err)
			}
			wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
			defer wcancel()
			watched, _ := run(t, wctx, append([]string{"registry", "watch", "/"}, flags...)...)
			if strings.Count(watched, "PUT ") < len(hostileValues) {
				t.Errorf("registry watch / printed:\n%s", watched)
			}
			assertHidden(t, "registry watch", watched)
		})
	}
}

// TestHostileSecretsThroughCLI runs a real `shardkeeper serve` on etcd and
// on ZooKeeper whose registry holds authority users, a unit with
// passwords in every URL form and encrypt keys, and reads them back every
// way the CLI offers: databases show through the node's API (table, json,
// yaml) and from the registry, registry get of the rules. Nothing secret
// is printed, nor logged by serve; --show-secrets shows them only when the
// registry is read directly.
func TestHostileSecretsThroughCLI(t *testing.T) {
	for _, reg := range realRegistries(t) {
		t.Run(reg.name, func(t *testing.T) { secretsThroughCLI(t, reg) })
	}
}

func secretsThroughCLI(t *testing.T, reg realRegistry) {
	users := "authority:\n  users:\n    - user: root@%\n      password: rootpw\n    - user: sharding\n      password: shardpw\n  privilege:\n    type: ALL_PERMITTED\n"
	database := `databaseName: secret_db
dataSources:
  ds_0:
    url: jdbc:mysql://user:p@ss@127.0.0.1:3306/demo?sslpassword=SecA&password=SecB&password1=mfa1&password2=mfa2&password3=mfa3
    username: root
    password: fieldpw
    customPoolProps:
      dataSource.password: poolpw
rules:
- !ENCRYPT
  tables:
    t_user:
      columns:
        password:
          cipher:
            name: password_cipher
            encryptorName: aes_encryptor
  encryptors:
    aes_encryptor:
      type: AES
      props:
        aes-key-value: aeskey123
        digest-algorithm-name: SHA-1
    sm4_encryptor:
      type: SM4
      props:
        sm4-key: sm4key0123456789
        sm4-mode: ECB
`
	conf := clusterConf(t, reg, "sk_secrets_cli_", users, map[string]string{"database-secret.yaml": database})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	repo := openConf(ctx, t, conf, "/nodes", "/reservation", "/metadata", "/rules", "/props")
	// The registry is filled from the conf dir as a first node would, but
	// without connecting to the unit (nobody listens on its port): serve
	// then loads it from the registry.
	cfg, err := config.Load(t.Context(), conf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metadata.Bootstrap(ctx, repo, nil, cfg, metadata.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envServer, "")
	t.Setenv(envToken, "")
	output, stop := startServe(t, "--conf", conf, "--instance-id", "secrets-cli", "--http", "127.0.0.1:0", "--port", "3398")
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	m := regexp.MustCompile(`HTTP API and status page on (http://127\.0\.0\.1:\d+)/`).FindStringSubmatch(output())
	if m == nil {
		t.Fatalf("no HTTP address in the serve output:\n%s", output())
	}
	server := m[1]
	cli := func(code int, args ...string) string {
		t.Helper()
		stdout, stderr, got := runCLI(t, args...)
		if got != code {
			t.Fatalf("shardkeeper %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, stdout, stderr)
		}
		assertHidden(t, "shardkeeper "+strings.Join(args, " "), stdout+stderr)
		return stdout + stderr
	}
	for _, o := range []string{"table", "json", "yaml"} {
		out := cli(0, "databases", "show", "secret_db", "-o", o, "--server", server)
		if o != "table" && (!strings.Contains(out, redact.Mask) || !strings.Contains(out, "aes_encryptor") || !strings.Contains(out, "password_cipher")) {
			t.Errorf("databases show -o %s through the API:\n%s", o, out)
		}
		cli(0, "databases", "show", "secret_db", "-o", o, "--conf", conf)
	}
	cli(2, "databases", "show", "secret_db", "--show-secrets", "--server", server)
	if out, _, code := runCLI(t, "databases", "show", "secret_db", "-o", "json", "--show-secrets", "--conf", conf); code != 0 ||
		!strings.Contains(out, "aeskey123") || !strings.Contains(out, "p@ss@127.0.0.1") {
		t.Errorf("databases show --show-secrets from the registry: exit %d\n%s", code, out)
	}
	for _, p := range []string{"/rules/authority", "/metadata/secret_db/data_sources/units/ds_0", "/metadata/secret_db/rules/encrypt/encryptors/aes_encryptor",
		"/metadata/secret_db/rules/encrypt/encryptors/sm4_encryptor"} {
		v := strings.TrimSpace(cli(0, "registry", "get", p+"/active_version", "--conf", conf))
		out := cli(0, "registry", "get", p+"/versions/"+v, "-o", "json", "--conf", conf)
		if !strings.Contains(out, redact.Mask) {
			t.Errorf("registry get %s masked nothing:\n%s", p, out)
		}
	}
	stopped = true
	assertHidden(t, "serve output", stop())
}

// TestServeLoggerMasksSecrets checks the wiring of serve's logger: text
// and JSON lines go through redact.Handler. (The instance id on every
// line: TestFreshStartLogsOneFormat.)
func TestServeLoggerMasksSecrets(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf strings.Builder
		log := newLogger(&buf, format)
		log.Warn("unit jdbc:mysql://user:p@ss@h/db failed", "err", errors.New("dial jdbc:mysql://h/db?sslpassword=SecA&password=SecB"),
			"password", "fieldpw", "unit", config.NewDataSource("jdbc:mysql://h/db?password1=mfa1", "u", "poolpw"))
		assertHidden(t, format+" log", buf.String())
	}
}
