package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rules"
	"github.com/shardkeeper/shardkeeper/registry"
)

// newRulesCommand is the rules noun: the sharding, broadcast, mask and encrypt rule
// statements of DistSQL, run as the consoles and the HTTP API run them
// (internal/rules).
func newRulesCommand() *cobra.Command {
	t := &target{}
	var database string
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Sharding, broadcast, mask and encrypt rules: apply a DistSQL rule statement",
		Long: `Runs one sharding, broadcast, mask or encrypt rule statement of DistSQL
(CREATE, ALTER or DROP SHARDING TABLE RULE, SHARDING TABLE REFERENCE RULE,
DEFAULT SHARDING STRATEGY, SHARDING ALGORITHM, SHARDING KEY GENERATOR,
SHARDING KEY GENERATE STRATEGY, BROADCAST TABLE RULE, MASK RULE, ENCRYPT RULE)
on a database, as the consoles and the HTTP API run it: upstream's checks and
codes, the changed rule items written in one registry transaction, and it
returns once every online shardkeeper node confirmed applying the new rules
(or after 3 s, naming the nodes that did not).`,
		Example: `  shardkeeper rules apply --database sharding_db --conf ./conf \
    "CREATE BROADCAST TABLE RULE t_dict"
  shardkeeper rules apply --database sharding_db --server http://127.0.0.1:8080 \
    "DROP SHARDING TABLE RULE t_order"`,
	}
	t.register(cmd)
	apply := &cobra.Command{
		Use: "apply STATEMENT", Short: "Run one rule statement on --database", Args: args(1, 1, "STATEMENT"),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := t.check(); err != nil {
				return err
			}
			if database == "" {
				return errors.New("--database is required")
			}
			return applyRule(cmd.Context(), t, database, a[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	apply.Flags().StringVar(&database, "database", "", "the logical database the statement changes")
	cmd.AddCommand(apply)
	return cmd
}

// applyRule runs statement on database db: through the node's HTTP API
// with --server, otherwise through rules.Apply on the registry, with the
// layout of the conf's layoutVersion.
func applyRule(ctx context.Context, t *target, db, statement string, w, errw io.Writer) error {
	st, err := distsql.Parse(statement)
	var se *distsql.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s (code %d)", se.Error(), distsql.SyntaxErrorCode)
	}
	if err != nil {
		return err
	}
	if !rules.Is(st) {
		return errors.New("not a rule statement: rules apply runs " + rules.Statements)
	}
	var warnings []string
	changed := false
	if t.useServer() {
		c, err := t.client()
		if err != nil {
			return err
		}
		var resp struct {
			Changed  bool     `json:"changed"`
			Warnings []string `json:"warnings"`
		}
		if err := c.do(ctx, "POST", "/api/v1/databases/"+url.PathEscape(db)+"/rules", map[string]string{"statement": statement}, &resp); err != nil {
			return err
		}
		warnings, changed = resp.Warnings, resp.Changed
	} else {
		rc, err := t.reg.repository(ctx)
		if err != nil {
			return err
		}
		if err := t.withRegistry(ctx, func(ctx context.Context, r registry.Repository) error {
			out, err := rules.Apply(ctx, r, db, st, rules.Options{Layout: rc.Layout})
			warnings, changed = out.Warnings(db), out.Changed
			var unknown *dbconfig.UnknownDatabaseError
			if errors.As(err, &unknown) {
				return fmt.Errorf("Unknown database '%s'.", db)
			}
			return refusal(err)
		}); err != nil {
			return err
		}
	}
	for _, warning := range warnings {
		fmt.Fprintln(errw, "warning:", warning)
	}
	if !changed {
		_, err = fmt.Fprintln(w, "unchanged")
		return err
	}
	_, err = fmt.Fprintln(w, "applied")
	return err
}
