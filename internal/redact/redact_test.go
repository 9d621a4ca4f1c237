package redact

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// secretWords are the secrets the cases below hide: none may appear in any
// masked output.
var secretWords = []string{"SecA", "SecB", "mfa1", "mfa2", "mfa3", "p@ss", "ss@", "q?w#e", "tiger", "sp ace", "pa,ss",
	"aeskey123", "sm4k", "rootpw", "shardpw", "zkpw", "tok3n", "-----BEGIN", "salty"}

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"jdbc:postgresql://127.0.0.1:5432/db?sslpassword=SecA&password=SecB",
			"jdbc:postgresql://127.0.0.1:5432/db?sslpassword=******&password=******"},
		{"jdbc:mysql://h:3306/db?user=u&password1=mfa1&password2=mfa2&password3=mfa3&useSSL=false",
			"jdbc:mysql://h:3306/db?user=u&password1=******&password2=******&password3=******&useSSL=false"},
		{"jdbc:mysql://user:p@ss@host:3306/db", "jdbc:mysql://user:******@host:3306/db"},
		{"jdbc:postgresql://user:p@ss@host/db?password=SecB&sslmode=disable", "jdbc:postgresql://user:******@host/db?password=******&sslmode=disable"},
		{"postgres://u:q?w#e@host/db", "postgres://u:******@host/db"},
		{"postgres://u:p@s?s@host/db", "postgres://u:******@host/db"},
		{"postgres://u:tiger/x@host/db", "postgres://u:******@host/db"},
		{"jdbc:postgresql://h:5432/db?user=a@b.org", "jdbc:postgresql://h:5432/db?user=a@b.org"},
		{"jdbc:postgresql://u@host/db", "jdbc:postgresql://u@host/db"},
		{"jdbc:postgresql://u:@host/db", "jdbc:postgresql://u:@host/db"},
		{"jdbc:mysql://address=(host=h)(port=3306)(user=u)(password=tiger)/db", "jdbc:mysql://address=(host=h)(port=3306)(user=u)(password=******)/db"},
		{"jdbc:mysql://(host=h,port=3306,user=u,password=pa,ss,ssl=true)/db", "jdbc:mysql://(host=h,port=3306,user=u,password=******,ssl=true)/db"},
		{"jdbc:sqlserver://h;user=u;Password=SecB;db=x", "jdbc:sqlserver://h;user=u;Password=******;db=x"},
		{"root:tiger@tcp(127.0.0.1:3306)/db?parseTime=true", "root:******@tcp(127.0.0.1:3306)/db?parseTime=true"},
		{"root:tiger@/db", "root:******@/db"},
		{"host=h user=u password='sp ace' dbname=d", "host=h user=u password=****** dbname=d"},
		{"jdbc:mysql://h/db?PASSWORD=SecB", "jdbc:mysql://h/db?PASSWORD=******"},
		{"jdbc:mysql://h/db?trustCertificateKeyStorePassword=SecA&clientCertificateKeyStorePassword=SecB",
			"jdbc:mysql://h/db?trustCertificateKeyStorePassword=******&clientCertificateKeyStorePassword=******"},
		{"jdbc:sqlite:/var/data/shard.db", "jdbc:sqlite:/var/data/shard.db"},
		{"jdbc:postgresql://h:5432/db?password=", "jdbc:postgresql://h:5432/db?password="},
		{"ds_${user_id % 2}", "ds_${user_id % 2}"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestSecretName(t *testing.T) {
	for _, n := range []string{"password", "Password", "dataSource.password", "sslpassword", "password1", "password2", "password3",
		"trustStorePassword", "pwd", "passwd", "secret", "client-secret", "token", "accessToken", "credentials", "passphrase",
		"aes-key-value", "AES_KEY_VALUE", "rc4-key-value", "sm4-key", "sm4-iv", "sm3-salt", "salt", "private-key", "privateKey",
		"digest", "api_key"} {
		if !SecretName(n) {
			t.Errorf("SecretName(%q) = false", n)
		}
	}
	for _, n := range []string{"user", "username", "url", "primaryKey", "keyGenerateStrategy", "digest-algorithm-name", "sm4-mode",
		"sm4-padding", "type", "dataSourceClassName", "maxPoolSize", "shardingColumn", "users", "readOnly", ""} {
		if SecretName(n) {
			t.Errorf("SecretName(%q) = true", n)
		}
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`url jdbc:mysql://u:p@ss@h/db?password=SecB: unsupported`, `url jdbc:mysql://u:******@h/db?password=****** unsupported`},
		{`dial "root:tiger@tcp(127.0.0.1:3306)/db" failed`, `dial "root:******@tcp(127.0.0.1:3306)/db" failed`},
		{"url=jdbc:postgresql://h/db username=u password=****** maxPoolSize=5", "url=jdbc:postgresql://h/db username=u password=****** maxPoolSize=5"},
		{"file.yaml:3: dataSources.ds_0.password: must be a scalar value", "file.yaml:3: dataSources.ds_0.password: must be a scalar value"},
		{"token=tok3n and at 10:00@noon", "token=****** and at 10:00@noon"},
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// ruleYAML are registry values as ShardingSphere stores them: authority
// users in both forms, an encrypt rule with AES and SM4 keys, a unit.
var ruleYAML = []struct{ name, in string }{
	{"authority", `users:
- user: root@%
  password: rootpw
  admin: true
- user: sharding
  password: shardpw
privilege:
  type: ALL_PERMITTED
`},
	{"authority-strings", "users:\n  - root@%:rootpw\n  - sharding@:shardpw\n"},
	{"encryptors", `encryptors:
  aes_encryptor:
    type: AES
    props:
      aes-key-value: aeskey123
      digest-algorithm-name: SHA-1
  sm4_encryptor:
    type: SM4
    props:
      sm4-key: sm4k0123456789abcdef
      sm4-iv: sm4k-iv-0123456789
      sm4-mode: CBC
  md5:
    type: MD5
    props:
      salt: salty
`},
	{"unit", `dataSourceClassName: com.zaxxer.hikari.HikariDataSource
url: jdbc:mysql://user:p@ss@127.0.0.1:3306/db?sslpassword=SecA&password=SecB&password1=mfa1
username: root
password: rootpw
customPoolProps:
  dataSource.password: shardpw
  sslKeyPassword: tok3n
`},
	{"encrypt-columns", "tables:\n  t_user:\n    columns:\n      password:\n        cipher:\n          name: password_cipher\n          encryptorName: aes\n    token: tok3n\n"},
	{"private-key", "privateKey: |\n  -----BEGIN PRIVATE KEY-----\n  abc\n  -----END PRIVATE KEY-----\n"},
	{"json", `{"url":"jdbc:postgresql://h/db?password=SecB","token":"tok3n"}`},
	{"not-yaml", "password: zkpw\n\tdigest: zkpw\nurl: jdbc:mysql://u:p@ss@h/db [\n"},
}

func TestYAML(t *testing.T) {
	for _, c := range ruleYAML {
		t.Run(c.name, func(t *testing.T) {
			got := string(YAML([]byte(c.in)))
			for _, w := range secretWords {
				if strings.Contains(got, w) {
					t.Fatalf("%q shown:\n%s", w, got)
				}
			}
			if !strings.Contains(got, Mask) {
				t.Fatalf("nothing masked:\n%s", got)
			}
		})
	}
	// What is not secret survives, and the masked document is still YAML
	// with the same shape.
	out := YAML([]byte(ruleYAML[0].in))
	var back struct {
		Users []struct {
			User     string `yaml:"user"`
			Password string `yaml:"password"`
			Admin    bool   `yaml:"admin"`
		} `yaml:"users"`
		Privilege map[string]string `yaml:"privilege"`
	}
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Fatalf("masked YAML does not parse: %v\n%s", err, out)
	}
	if len(back.Users) != 2 || back.Users[0].User != "root@%" || back.Users[0].Password != Mask || !back.Users[0].Admin ||
		back.Privilege["type"] != "ALL_PERMITTED" {
		t.Fatalf("masked authority = %+v\n%s", back, out)
	}
	if got := string(YAML([]byte(ruleYAML[4].in))); !strings.Contains(got, "name: password_cipher") || !strings.Contains(got, "encryptorName: aes") {
		t.Fatalf("a column named password was masked whole:\n%s", got)
	}
	if got := string(YAML([]byte(ruleYAML[2].in))); !strings.Contains(got, "digest-algorithm-name: SHA-1") || !strings.Contains(got, "sm4-mode: CBC") {
		t.Fatalf("non-secret props lost:\n%s", got)
	}
	// Values without secrets come back byte for byte.
	for _, v := range []string{"OK", "17", "attribute: 127.0.0.1@3307\nversion: 5.5.0\n", "name: t_order\ncolumns:\n  order_id:\n    primaryKey: true\n", ""} {
		if got := string(YAML([]byte(v))); got != v {
			t.Fatalf("YAML(%q) = %q: want it unchanged", v, got)
		}
	}
}

func TestValue(t *testing.T) {
	in := map[string]any{
		"url":             "jdbc:mysql://h/db?sslpassword=SecA&password=SecB",
		"password":        "rootpw",
		"empty":           map[string]any{"password": ""},
		"users":           []any{"root@%:rootpw", map[string]any{"user": "sharding", "password": "shardpw"}},
		"encryptors":      map[any]any{"aes": map[string]any{"type": "AES", "props": map[string]any{"aes-key-value": 123456}}},
		"credentials":     map[string]any{"user": "u", "token": "tok3n"},
		"maxPoolSize":     5,
		"customPoolProps": map[string]string{"dataSource.password": "shardpw", "cachePrepStmts": "true"},
	}
	got := Value(in).(map[string]any)
	s := strings.ReplaceAll(strings.ReplaceAll(toYAML(t, got), "\n", " "), "  ", " ")
	for _, w := range append(secretWords, "123456") {
		if strings.Contains(s, w) {
			t.Fatalf("%q shown: %s", w, s)
		}
	}
	if got["credentials"].(map[string]any)["user"] != "u" || got["maxPoolSize"] != 5 || got["customPoolProps"].(map[string]string)["cachePrepStmts"] != "true" || got["users"].([]any)[0] != "root@%:"+Mask || got["empty"].(map[string]any)["password"] != "" {
		t.Fatalf("Value = %s", s)
	}
	if in["password"] != "rootpw" {
		t.Fatal("Value changed its argument")
	}
}

func toYAML(t *testing.T, v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestKnown(t *testing.T) {
	got := Known("auth failed for tiger (tiger-long) x password=SecB", "tiger", "tiger-long", "x", "")
	if want := "auth failed for ****** (******) x password=******"; got != want {
		t.Fatalf("Known = %q, want %q", got, want)
	}
}

func TestContainsMask(t *testing.T) {
	if !ContainsMask(YAML([]byte(ruleYAML[3].in))) || ContainsMask([]byte("password: ***")) {
		t.Fatal("ContainsMask")
	}
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewTextHandler(&buf, nil))).With("password", "rootpw")
	log.Info("open jdbc:mysql://u:p@ss@h/db", "err", errors.New("dial postgres://u:tiger@h/db?password=SecB"),
		"token", true, "secret", "tok3n", "props", map[string]any{"aes-key-value": "aeskey123"}, slog.Group("ds", "url", "jdbc:mysql://h/db?password=SecA"))
	_ = log.Handler().Handle(context.Background(), slog.Record{})
	out := buf.String()
	for _, w := range secretWords {
		if strings.Contains(out, w) {
			t.Fatalf("%q logged: %s", w, out)
		}
	}
	if !strings.Contains(out, "token=true") || !strings.Contains(out, "password=******") {
		t.Fatalf("log = %s", out)
	}
}

// FuzzRedact feeds arbitrary text to every masking function: none may
// panic, and a URL's parsed password never survives URL.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"jdbc:mysql://u:p@ss@h/db?password=x", "root:pw@tcp(h)/db", "users:\n- a@b:c\n", "password='x", "a=b,c=d", "://@:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u := URL(s)
		_, _, _ = Text(s), YAML([]byte(s)), User(s)
		if pu, err := url.Parse(s); err == nil && strings.Contains(s, "://") {
			if pw, ok := pu.User.Password(); ok && len(pw) >= 3 && !strings.Contains(Mask, pw) && strings.Contains(u, "@") && strings.Contains(u, ":"+pw+"@") {
				t.Fatalf("URL(%q) = %q keeps the password %q", s, u, pw)
			}
		}
	})
}
