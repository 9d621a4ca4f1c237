package httpapi

import (
	"context"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestHostileSecretsInOpenReads reads a database through the open API (no
// token, reads open: the default) as anyone who can reach the port would:
// no password of a unit, in any of the forms a JDBC URL allows, and no key
// of the encrypt or mask rules may come back.
func TestHostileSecretsInOpenReads(t *testing.T) {
	repo := memory.New()
	n := startNode(t, repo, "open-reads", nil)
	ds := config.NewDataSource("jdbc:mysql://user:p@ss@127.0.0.1:3306/demo?sslpassword=SecA&password=SecB&password1=mfa1&password2=mfa2&password3=mfa3",
		"root", "fieldpw")
	ds.CustomPoolProps = map[string]string{"dataSource.password": "poolpw", "cachePrepStmts": "true"}
	rules := []config.Rule{
		{Type: "encrypt", Content: map[string]any{
			"encryptors": map[string]any{
				"aes_encryptor": map[string]any{"type": "AES", "props": map[string]any{"aes-key-value": "aeskey123", "digest-algorithm-name": "SHA-1"}},
				"sm4_encryptor": map[string]any{"type": "SM4", "props": map[string]any{"sm4-key": "sm4key0123456789", "sm4-iv": "sm4iv0123456789a", "sm4-mode": "CBC"}},
			},
			"tables": map[string]any{"t_user": map[string]any{"columns": map[string]any{
				"pwd": map[string]any{"cipher": map[string]any{"name": "pwd_cipher", "encryptorName": "aes_encryptor"}}}}},
		}},
		{Type: "mask", Content: map[string]any{
			"maskAlgorithms": map[string]any{"md5_mask": map[string]any{"type": "MD5", "props": map[string]any{"salt": "saltysalt"}}},
		}},
	}
	if err := metadatatest.CreateDatabase(context.Background(), repo, paths.DefaultLayout, config.Database{Name: "secret_db",
		DataSources: map[string]config.DataSource{"ds_0": ds}, Rules: rules}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "database with both rules seen", func() bool {
		body := string(get(t, n, "/api/v1/databases/secret_db").body)
		return strings.Contains(body, `"encrypt"`) && strings.Contains(body, `"mask"`) && strings.Contains(body, `"ds_0"`) &&
			strings.Contains(body, "sm4_encryptor") && strings.Contains(body, "md5_mask")
	})
	r := do(t, n, "GET", "/api/v1/databases/secret_db", "", "")
	if r.status != 200 {
		t.Fatalf("open read: %d %s", r.status, r.body)
	}
	body := string(r.body)
	for _, w := range []string{"p@ss", "ss@", "SecA", "SecB", "mfa1", "mfa2", "mfa3", "fieldpw", "poolpw", "aeskey123", "sm4key0123456789", "sm4iv0123456789a", "saltysalt"} {
		if strings.Contains(body, w) {
			t.Errorf("GET /api/v1/databases/secret_db without a token shows %q", w)
		}
	}
	for _, w := range []string{"127.0.0.1:3306/demo", `"cachePrepStmts":"true"`, `"digest-algorithm-name":"SHA-1"`, `"sm4-mode":"CBC"`, `"encryptorName":"aes_encryptor"`} {
		if !strings.Contains(body, w) {
			t.Errorf("the masked database lost %s", w)
		}
	}
	if t.Failed() {
		t.Logf("body: %s", body)
	}
	// The token does not unmask anything: the API never returns a secret.
	if tb := string(do(t, n, "GET", "/api/v1/databases/secret_db", testToken, "").body); strings.Contains(tb, "aeskey123") || strings.Contains(tb, "SecB") {
		t.Errorf("with the token: %s", tb)
	}
}
