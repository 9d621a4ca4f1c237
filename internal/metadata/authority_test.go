package metadata

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestAuthorityDiffersRefusesStart follows the README's order the wrong
// way round on real etcd and ZooKeeper: a cluster first started without
// users (loopback-only), then a node whose global.yaml has users. That
// node refuses to start, naming the users (never a password) and the two
// ways on, and writes nothing; with ApplyAuthority it writes the local
// rule (logged) and every later start with that conf is clean; a changed
// password is named as such; ApplyAuthority without a local rule fails.
func TestAuthorityDiffersRefusesStart(t *testing.T) {
	const secret = "pw-Secret1"
	withUsers := func(t *testing.T, rootPassword string) *config.Config {
		cfg := exampleConfig(t)
		for i, r := range cfg.GlobalRules {
			if r.Type == authority.RuleType {
				cfg.GlobalRules[i].Content = map[string]any{"users": []any{
					map[string]any{"user": "root@%", "password": rootPassword, "admin": true},
					map[string]any{"user": "app@%", "password": secret},
				}}
			}
		}
		return cfg
	}
	withoutUsers := func(t *testing.T) *config.Config {
		cfg := exampleConfig(t)
		cfg.GlobalRules = slices.DeleteFunc(cfg.GlobalRules, func(r config.Rule) bool { return r.Type == authority.RuleType })
		return cfg
	}
	for _, b := range realBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			repo1 := b.open(t)
			bootOn(t, repo1, withoutUsers(t), fakeIntrospect)
			node, err := paths.GlobalRule(authority.RuleType)
			if err != nil {
				t.Fatal(err)
			}
			boot := func(cfg *config.Config, apply bool) (*Store, string, error) {
				t.Helper()
				var logs strings.Builder
				log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
				repo := another(t, repo1)
				sess, err := repo.NewSession(testenv.Context(t), registry.SessionOptions{TTL: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer sess.Close(context.Background())
				s, err := Bootstrap(testenv.Context(t), repo, sess, cfg, Options{Introspect: fakeIntrospect, Logger: log, ApplyAuthority: apply})
				return s, logs.String(), err
			}

			_, logs, err := boot(withUsers(t, secret), false)
			var ae *AuthorityError
			if !errors.As(err, &ae) {
				t.Fatalf("a local authority rule the registry lacks: %v (logs %s)", err, logs)
			}
			msg := err.Error()
			for _, want := range []string{"root@% only in the local configuration", "app@% only in the local configuration",
				"the registry has no users", "--apply-authority", "remove the authority rule from the local global.yaml"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the refusal lacks %q: %s", want, msg)
				}
			}
			if strings.Contains(msg, secret) || strings.Contains(logs, secret) {
				t.Fatalf("the refusal shows a password: %s\n%s", msg, logs)
			}
			if _, err := repo1.Get(testenv.Context(t), paths.ActiveVersion(node)); !errors.Is(err, registry.ErrNotFound) {
				t.Fatalf("the refused start wrote the authority rule: %v", err)
			}

			s, logs, err := boot(withUsers(t, secret), true)
			if err != nil {
				t.Fatalf("--apply-authority: %v", err)
			}
			users, err := authority.FromRules(s.Current().GlobalRules[authority.RuleType])
			if err != nil || len(users.List()) != 2 || users.List()[0].String() != "root@%" || !users.List()[0].Admin {
				t.Fatalf("the applied users: %v, %v", users.List(), err)
			}
			if !strings.Contains(logs, "applying the local authority rule") || !strings.Contains(logs, "app@% only in the local configuration") || strings.Contains(logs, secret) {
				t.Fatalf("the apply's log:\n%s", logs)
			}
			if _, logs, err := boot(withUsers(t, secret), false); err != nil || strings.Contains(logs, "authority") {
				t.Fatalf("the same local rule after the apply: %v\n%s", err, logs)
			}

			_, _, err = boot(withUsers(t, "changed-"+secret), false)
			if !errors.As(err, &ae) || !slices.Equal(ae.Differences, []string{"root@% differs (password)"}) || strings.Contains(err.Error(), secret) {
				t.Fatalf("a changed password: %v", err)
			}
			if _, _, err := boot(withoutUsers(t), true); err == nil || !strings.Contains(err.Error(), "no authority rule to apply") {
				t.Fatalf("--apply-authority without a local rule: %v", err)
			}
			if _, _, err := boot(withoutUsers(t), false); err != nil {
				t.Fatalf("no local rule: the registry's users, no refusal: %v", err)
			}
		})
	}
}
