// Package authority reads the users a node accepts from ShardingSphere's
// `authority` global rule (global.yaml's `authority:` key or `!AUTHORITY`
// rule, or the registry's /rules/authority) and finds the user a client
// logs in as, the way ShardingSphere-Proxy matches a Grantee.
//
// Passwords are kept in plain text, as upstream stores them: the MySQL and
// PostgreSQL password methods need the password itself to check a
// client's scramble.
//
// Privileges are upstream's: a user with `admin: true` may run every
// statement; the rule's `privilege` (ALL_PERMITTED, upstream's default, or
// DATABASE_PERMITTED with `props: user-database-mappings`) says which
// logical databases each user may use. A privilege type not implemented
// here is an error, never ignored.
package authority

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
)

// RuleType is the global rule type the users come from.
const RuleType = "authority"

// AnyHost is the host pattern that accepts every client address.
const AnyHost = "%"

// User is one configured user. Host is AnyHost ("%": any client) or an
// exact host. An IP address is compared as an address (::ffff:10.0.0.1
// is 10.0.0.1). "localhost" accepts every loopback address. Any other host
// name accepts no client: upstream compares it with the client's IP
// address text, which a name never equals, and no name is resolved here.
type User struct {
	Name     string
	Host     string
	Password string
	// AuthenticationMethod is the password method the user must log in
	// with: the type of the authenticator the user's
	// authenticationMethodName (else the rule's defaultAuthenticator)
	// names in the rule's authenticators, or that name itself when no
	// authenticator has it; "" when neither is set (each front end then
	// uses its protocol's default). A front end treats a method it does
	// not know as its default, as upstream does.
	AuthenticationMethod string
	// Admin is the user's `admin: true`: it may run the statements that
	// need an admin (see docs/security.md) and use every database.
	Admin bool
}

// String is the user as upstream writes a grantee: name@host.
func (u User) String() string { return u.Name + "@" + u.Host }

// Users is the set of configured users, in configuration order. The zero
// value and nil have no users. Safe for concurrent use (never modified).
type Users struct {
	list []User
	// databases is DATABASE_PERMITTED's user-database-mappings, nil under
	// ALL_PERMITTED.
	databases []mapping
}

// mapping is one item of user-database-mappings: name@host=database.
type mapping struct {
	name, host, database string
}

// FromRules returns the users of the authority rule among rules (rules of
// other types are ignored; with no authority rule, or one without users,
// the result is Empty). The rule's `users` is a list whose items are
// either mappings `{user: name@host, password: ..., admin: true}`
// (ShardingSphere 5.1 and later) or strings `name@host:password` (5.0).
// The rule's `privilege` (5.1-5.3: `provider`) is {type: ALL_PERMITTED}
// (the default) or {type: DATABASE_PERMITTED, props:
// {user-database-mappings: "name@host=db, ..."}}; any other type is an
// error (config.CheckPrivilege, which config.ParseGlobal applies with the
// file and line). A user's
// authenticationMethodName, or the rule's defaultAuthenticator, is
// resolved through the rule's authenticators (see User). A missing or empty host is
// AnyHost. Every problem is reported at once, naming the item; a user name
// that is empty, or the same name@host twice, is an error.
func FromRules(rules ...config.Rule) (*Users, error) {
	var rule *config.Rule
	for i := range rules {
		if rules[i].Type == RuleType {
			rule = &rules[i]
		}
	}
	if rule == nil || rule.Content["users"] == nil {
		return &Users{}, nil
	}
	items, ok := rule.Content["users"].([]any)
	if !ok {
		return nil, fmt.Errorf("authority: users: must be a list of {user: name@host, password: ...}, not %T", rule.Content["users"])
	}
	var errs []error
	authenticators, err := parseAuthenticators(rule.Content["authenticators"])
	if err != nil {
		errs = append(errs, err)
	}
	defaultMethod, _ := rule.Content["defaultAuthenticator"].(string)
	u := &Users{}
	if u.databases, err = parsePrivilege(rule.Content); err != nil {
		errs = append(errs, err)
	}
	seen := map[string]int{}
	for i, item := range items {
		usr, method, err := parseUser(item)
		if err != nil {
			errs = append(errs, fmt.Errorf("authority: users[%d]: %w", i, err))
			continue
		}
		if method == "" {
			method = defaultMethod
		}
		if typ, ok := authenticators[method]; ok {
			method = typ
		}
		usr.AuthenticationMethod = method
		key := strings.ToLower(usr.String())
		if j, dup := seen[key]; dup {
			errs = append(errs, fmt.Errorf("authority: users[%d]: %s is configured twice (also users[%d])", i, usr, j))
			continue
		}
		seen[key] = i
		u.list = append(u.list, usr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return u, nil
}

// parseAuthenticators reads the rule's authenticators: name -> {type: T}.
func parseAuthenticators(v any) (map[string]string, error) {
	out := map[string]string{}
	if v == nil {
		return out, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("authority: authenticators: must be a mapping of names to {type: ...}, not %T", v)
	}
	var errs []error
	for name, a := range m {
		am, _ := a.(map[string]any)
		typ, _ := am["type"].(string)
		if typ == "" {
			errs = append(errs, fmt.Errorf("authority: authenticators.%s: type: must be a non-empty string", name))
			continue
		}
		out[name] = typ
	}
	return out, errors.Join(errs...)
}

// parseUser reads one item of users and returns the user and its
// authenticationMethodName.
func parseUser(item any) (User, string, error) {
	switch v := item.(type) {
	case string:
		grantee, password, ok := strings.Cut(v, ":")
		if !ok {
			return User{}, "", fmt.Errorf("%q: want name@host:password or a mapping {user: name@host, password: ...}", v)
		}
		u, err := newUser(grantee, password)
		return u, "", err
	case map[string]any:
		for k := range v {
			switch k {
			case "user", "password", "admin", "authenticationMethodName":
			default:
				return User{}, "", fmt.Errorf("unknown field %q (want user, password, admin, authenticationMethodName)", k)
			}
		}
		grantee, ok := v["user"].(string)
		if !ok {
			return User{}, "", errors.New("user: must be a string name@host")
		}
		password, err := scalar(v["password"])
		if err != nil {
			return User{}, "", fmt.Errorf("%s: password: %w", grantee, err)
		}
		method, err := scalar(v["authenticationMethodName"])
		if err != nil {
			return User{}, "", fmt.Errorf("%s: authenticationMethodName: %w", grantee, err)
		}
		u, err := newUser(grantee, password)
		switch a := v["admin"].(type) {
		case nil:
		case bool:
			u.Admin = a
		default:
			return User{}, "", fmt.Errorf("%s: admin: must be true or false, not %v", grantee, a)
		}
		return u, method, err
	default:
		return User{}, "", fmt.Errorf("must be a mapping {user: name@host, password: ...}, not %T", item)
	}
}

// scalar is a YAML scalar as the text upstream's String field gets:
// password: 123 is "123"; a missing password is "".
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case int:
		return strconv.Itoa(x), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	default:
		return "", fmt.Errorf("must be a string, not %T", v)
	}
}

// newUser splits grantee at its first '@' as upstream's YamlUserSwapper
// does: "name" alone and "name@" are name@%.
func newUser(grantee, password string) (User, error) {
	name, host, _ := strings.Cut(grantee, "@")
	if name == "" {
		return User{}, fmt.Errorf("user %q: the user name is empty; the legal format is name@host", grantee)
	}
	if host == "" {
		host = AnyHost
	}
	return User{Name: name, Host: host, Password: password}, nil
}

// Empty reports whether no user is configured. A front end then accepts
// only loopback clients, under any user name, without a password.
func (u *Users) Empty() bool { return u == nil || len(u.list) == 0 }

// List returns a copy of the users in configuration order.
func (u *Users) List() []User {
	if u == nil {
		return nil
	}
	return append([]User(nil), u.list...)
}

// Lookup returns the first user, in configuration order, whose name
// equals name (case-insensitively, as upstream) and whose Host accepts
// client (see User). ok is false when none does.
func (u *Users) Lookup(name string, client netip.Addr) (usr User, ok bool) {
	if u == nil {
		return User{}, false
	}
	for _, c := range u.list {
		if strings.EqualFold(c.Name, name) && c.Accepts(client) {
			return c, true
		}
	}
	return User{}, false
}

// Accepts reports whether a client at addr may log in as u.
func (u User) Accepts(addr netip.Addr) bool {
	if u.Host == AnyHost {
		return true
	}
	addr = addr.Unmap().WithZone("")
	if h, err := netip.ParseAddr(u.Host); err == nil {
		return addr.IsValid() && h.Unmap().WithZone("") == addr
	}
	return strings.EqualFold(u.Host, "localhost") && addr.IsLoopback()
}

// parsePrivilege reads the rule's privilege (or provider): nil mappings
// for ALL_PERMITTED or none.
func parsePrivilege(content map[string]any) ([]mapping, error) {
	key := "privilege"
	v := content[key]
	if v == nil {
		key = "provider"
		v = content[key]
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("authority: %s: must be a mapping {type: %s}, not %T", key, config.AllPermitted, v)
	}
	typ, _ := m["type"].(string)
	var mappings string
	if props, ok := m["props"].(map[string]any); ok {
		mappings, _ = props[config.UserDatabaseMappings].(string)
	}
	if err := config.CheckPrivilege(typ, mappings); err != nil {
		return nil, fmt.Errorf("authority: %s.type: %w", key, err)
	}
	if !strings.EqualFold(typ, config.DatabasePermitted) {
		return nil, nil
	}
	return parseMappings(mappings)
}

// parseMappings reads user-database-mappings, checked by
// config.CheckPrivilege: comma-separated name@host=database items
// (upstream's format; a database "*" is every database).
func parseMappings(s string) ([]mapping, error) {
	var out []mapping
	for _, item := range strings.Split(s, ",") {
		grantee, db, _ := strings.Cut(strings.TrimSpace(item), "=")
		name, host, _ := strings.Cut(grantee, "@")
		out = append(out, mapping{name: name, host: host, database: db})
	}
	return out, nil
}

// Permits reports whether usr may use database db: always under
// ALL_PERMITTED or for an admin; under DATABASE_PERMITTED when a mapping
// names usr's name and either usr's host or "%", with db or "*" (as
// upstream's DatabasePermittedPrivilegeProvider grants).
func (u *Users) Permits(usr User, db string) bool {
	if u == nil || u.databases == nil || usr.Admin {
		return true
	}
	for _, m := range u.databases {
		if m.name == usr.Name && (m.host == AnyHost || m.host == usr.Host) && (m.database == "*" || m.database == db) {
			return true
		}
	}
	return false
}

// Diff says how users want differs from users have, naming users by
// name@host and never a password: "app@% only in the local rule", "root@%
// only in the registry's rule", "root@% differs (password, admin)", "the
// privilege differs". wantName and haveName name the two sides ("the local rule",
// "the registry's rule"). Nil and Empty users have no users. The result
// is empty when both grant the same logins and privileges; it is sorted
// by user.
func Diff(want, have *Users, wantName, haveName string) []string {
	key := func(u User) string { return strings.ToLower(u.String()) }
	had := map[string]User{}
	for _, u := range have.List() {
		had[key(u)] = u
	}
	var out []string
	for _, u := range want.List() {
		h, ok := had[key(u)]
		delete(had, key(u))
		if !ok {
			out = append(out, fmt.Sprintf("%s only in %s", u, wantName))
			continue
		}
		var fields []string
		if u.Password != h.Password {
			fields = append(fields, "password")
		}
		if u.Admin != h.Admin {
			fields = append(fields, "admin")
		}
		if !strings.EqualFold(u.AuthenticationMethod, h.AuthenticationMethod) {
			fields = append(fields, "authentication method")
		}
		if len(fields) > 0 {
			out = append(out, fmt.Sprintf("%s differs (%s)", u, strings.Join(fields, ", ")))
		}
	}
	for _, u := range have.List() {
		if _, ok := had[key(u)]; ok {
			out = append(out, fmt.Sprintf("%s only in %s", u, haveName))
		}
	}
	slices.Sort(out)
	var wm, hm []mapping
	if want != nil {
		wm = want.databases
	}
	if have != nil {
		hm = have.databases
	}
	if !slices.Equal(wm, hm) || (wm == nil) != (hm == nil) {
		out = append(out, "the privilege (type or user-database-mappings) differs")
	}
	return out
}
