package authority_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/config"
)

func globalRules(t *testing.T, yaml string) []config.Rule {
	t.Helper()
	cfg, err := config.ParseGlobal("global.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg.GlobalRules
}

func TestFromRulesGlobalYAML(t *testing.T) {
	rules := globalRules(t, `
authority:
  users:
    - user: root@%
      password: root
    - user: sharding
      password: 123
      admin: true
      authenticationMethodName: md5
    - user: ops@10.0.0.7
      password: s3cret
    - user: local@localhost
      password: l
  privilege:
    type: ALL_PERMITTED
props:
  sql-show: false
`)
	u, err := authority.FromRules(rules...)
	if err != nil {
		t.Fatal(err)
	}
	if u.Empty() {
		t.Fatal("Empty() = true with four users")
	}
	want := []authority.User{
		{Name: "root", Host: "%", Password: "root"},
		{Name: "sharding", Host: "%", Password: "123", AuthenticationMethod: "md5", Admin: true},
		{Name: "ops", Host: "10.0.0.7", Password: "s3cret"},
		{Name: "local", Host: "localhost", Password: "l"},
	}
	got := u.List()
	if len(got) != len(want) {
		t.Fatalf("List() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("user %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestFromRulesAuthenticators(t *testing.T) {
	u, err := authority.FromRules(globalRules(t, `
authority:
  users:
    - user: a
      password: a
    - user: b
      password: b
      authenticationMethodName: sha2
    - user: c
      password: c
      authenticationMethodName: caching_sha2_password
  authenticators:
    sha2:
      type: CACHING_SHA2_PASSWORD
    native:
      type: MYSQL_NATIVE_PASSWORD
  defaultAuthenticator: native
`)...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, usr := range u.List() {
		got = append(got, usr.Name+"="+usr.AuthenticationMethod)
	}
	if want := "a=MYSQL_NATIVE_PASSWORD b=CACHING_SHA2_PASSWORD c=caching_sha2_password"; strings.Join(got, " ") != want {
		t.Errorf("methods = %s, want %s", strings.Join(got, " "), want)
	}
	if _, err := authority.FromRules(config.Rule{Type: "authority", Content: map[string]any{
		"users": []any{}, "authenticators": map[string]any{"x": map[string]any{}},
	}}); err == nil || !strings.Contains(err.Error(), "authenticators.x: type") {
		t.Errorf("authenticator without type: err = %v", err)
	}
}

func TestFromRulesTagAndOldStrings(t *testing.T) {
	rules := globalRules(t, `
rules:
  - !AUTHORITY
    users:
      - root@127.0.0.1:pa:ss
      - sharding@:sharding
    provider:
      type: ALL_PRIVILEGES_PERMITTED
`)
	u, err := authority.FromRules(rules...)
	if err != nil {
		t.Fatal(err)
	}
	got := u.List()
	want := []authority.User{{Name: "root", Host: "127.0.0.1", Password: "pa:ss"}, {Name: "sharding", Host: "%", Password: "sharding"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("List() = %+v, want %+v", got, want)
	}
}

func TestFromRulesNone(t *testing.T) {
	for name, rules := range map[string][]config.Rule{
		"no rules":        nil,
		"other rule":      {{Type: "transaction", Content: map[string]any{"defaultType": "LOCAL"}}},
		"no users":        {{Type: "authority", Content: map[string]any{"privilege": map[string]any{"type": "ALL_PERMITTED"}}}},
		"zero value rule": {{}},
	} {
		u, err := authority.FromRules(rules...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !u.Empty() {
			t.Errorf("%s: Empty() = false", name)
		}
		if _, ok := u.Lookup("root", netip.MustParseAddr("127.0.0.1")); ok {
			t.Errorf("%s: Lookup found a user", name)
		}
	}
	var nilUsers *authority.Users
	if !nilUsers.Empty() {
		t.Error("nil Users: Empty() = false")
	}
}

func TestFromRulesErrors(t *testing.T) {
	rules := globalRules(t, `
authority:
  users:
    - user: "@%"
      password: x
    - user: root@%
      password: [1, 2]
    - user: a@%
      password: a
    - user: A@%
      password: b
    - user: b
      pasword: typo
    - 42
    - nocolon
`)
	_, err := authority.FromRules(rules...)
	if err == nil {
		t.Fatal("FromRules accepted a bad user list")
	}
	for _, want := range []string{
		"users[0]: user \"@%\": the user name is empty",
		"users[1]: root@%: password: must be a string",
		"users[3]: A@% is configured twice (also users[2])",
		"users[4]: unknown field \"pasword\"",
		"users[5]: must be a mapping",
		"users[6]: \"nocolon\": want name@host:password",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := authority.FromRules(config.Rule{Type: "authority", Content: map[string]any{"users": "root"}}); err == nil {
		t.Error("users: root (not a list) accepted")
	}
}

func TestLookup(t *testing.T) {
	u, err := authority.FromRules(config.Rule{Type: "authority", Content: map[string]any{"users": []any{
		map[string]any{"user": "ops@10.0.0.7", "password": "exact"},
		map[string]any{"user": "ops@%", "password": "any"},
		map[string]any{"user": "v6@fe80::1", "password": "v6"},
		map[string]any{"user": "local@localhost", "password": "lo"},
		map[string]any{"user": "named@db.example.com", "password": "n"},
		map[string]any{"user": "only@192.168.1.1", "password": "o"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, addr string
		want       string // password of the user found; "" none
	}{
		{"ops", "10.0.0.7", "exact"},
		{"OPS", "10.0.0.7", "exact"}, // names are case-insensitive, as upstream
		{"ops", "::ffff:10.0.0.7", "exact"},
		{"ops", "10.0.0.8", "any"}, // first match in order: % after the exact host
		{"v6", "fe80::1", "v6"},
		{"v6", "fe80::1%eth0", "v6"},
		{"v6", "fe80::2", ""},
		{"local", "127.0.0.1", "lo"},
		{"local", "::1", "lo"},
		{"local", "127.0.0.2", "lo"},
		{"local", "10.0.0.1", ""},
		{"named", "127.0.0.1", ""}, // names are never resolved
		{"only", "192.168.1.1", "o"},
		{"only", "192.168.1.2", ""},
		{"nobody", "127.0.0.1", ""},
	} {
		got, ok := u.Lookup(c.name, netip.MustParseAddr(c.addr))
		if c.want == "" {
			if ok {
				t.Errorf("Lookup(%s, %s) = %v, want none", c.name, c.addr, got)
			}
			continue
		}
		if !ok || got.Password != c.want {
			t.Errorf("Lookup(%s, %s) = %+v, %v; want password %q", c.name, c.addr, got, ok, c.want)
		}
	}
}

func TestPrivilege(t *testing.T) {
	u, err := authority.FromRules(globalRules(t, `
authority:
  users:
    - user: root@%
      password: root
      admin: true
    - user: app@%
      password: app
    - user: app@10.0.0.7
      password: app
    - user: ops@10.0.0.8
      password: ops
  privilege:
    type: DATABASE_PERMITTED
    props:
      user-database-mappings: app@%=sales, app@10.0.0.7=hr, ops@10.0.0.8=*
`)...)
	if err != nil {
		t.Fatal(err)
	}
	users := u.List()
	root, app, app7, ops := users[0], users[1], users[2], users[3]
	if !root.Admin || app.Admin {
		t.Fatalf("admin: root %v, app %v", root.Admin, app.Admin)
	}
	for _, c := range []struct {
		u    authority.User
		db   string
		want bool
	}{
		{root, "anything", true}, // admin
		{app, "sales", true}, {app, "hr", false},
		{app7, "sales", true}, {app7, "hr", true}, {app7, "other", false}, // app@% applies to every host, as upstream
		{ops, "any", true},
	} {
		if got := u.Permits(c.u, c.db); got != c.want {
			t.Errorf("Permits(%s, %s) = %v, want %v", c.u, c.db, got, c.want)
		}
	}
	all, err := authority.FromRules(globalRules(t, "authority:\n  users:\n  - user: a@%\n  privilege:\n    type: all_permitted\n")...)
	if err != nil || !all.Permits(all.List()[0], "x") {
		t.Fatalf("ALL_PERMITTED: %v", err)
	}
}

// TestPrivilegeRefused: a privilege type that is not implemented, or
// DATABASE_PERMITTED without usable mappings, or a non-boolean admin, is
// an error naming the file and line, never ignored.
func TestPrivilegeRefused(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"authority:\n  users:\n  - user: a@%\n  privilege:\n    type: SCHEMA_PRIVILEGES_PERMITTED\n", `global.yaml:5: authority.privilege.type: privilege type "SCHEMA_PRIVILEGES_PERMITTED" is not implemented`},
		{"rules:\n- !AUTHORITY\n  users:\n  - user: a@%\n  provider:\n    type: MY_PROVIDER\n", `global.yaml:6: rules.!AUTHORITY.provider.type: privilege type "MY_PROVIDER" is not implemented`},
		{"authority:\n  users:\n  - user: a@%\n  privilege:\n    type: DATABASE_PERMITTED\n", `global.yaml:5: authority.privilege.type: DATABASE_PERMITTED needs props`},
		{"authority:\n  users:\n  - user: a@%\n  privilege:\n    type: DATABASE_PERMITTED\n    props:\n      user-database-mappings: a=db\n", `user-database-mappings item "a=db": want name@host=database`},
		{"authority:\n  users:\n  - user: a@%\n    admin: yes please\n", `global.yaml:4: authority.users.admin: "yes please" must be true or false`},
	} {
		_, err := config.ParseGlobal("global.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.yaml, err, c.want)
		}
	}
	// From the registry (no file): FromRules refuses it too.
	_, err := authority.FromRules(config.Rule{Type: "authority", Content: map[string]any{
		"users": []any{map[string]any{"user": "a@%"}}, "privilege": map[string]any{"type": "NOPE"}}})
	if err == nil || !strings.Contains(err.Error(), `privilege type "NOPE" is not implemented`) {
		t.Fatalf("FromRules: %v", err)
	}
}
