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
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rules"
	"github.com/shardkeeper/shardkeeper/registry"
)

// newRulesCommand is the rules noun: the rule statements of DistSQL, run
// as the consoles and the HTTP API run them (internal/rules).
func newRulesCommand() *cobra.Command {
	t := &target{}
	var database string
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Rules: apply a DistSQL rule statement",
		Long: `Runs one rule statement of DistSQL as the consoles and the HTTP API run it:
the next rule computed from the registry's, upstream's checks and codes, the
changed rule items written in one registry transaction, and it returns once
every online shardkeeper node confirmed applying the new rules (or after 3 s,
naming the nodes that did not).

On --database: ` + families.Statements() + `.
LOAD and UNLOAD SINGLE TABLE read the storage units' tables: with --conf this process connects to the units, with --server the
node does.

Without --database: ` + families.GlobalStatements() + ` (the global rules).`,
		Example: `  shardkeeper rules apply --database sharding_db --conf ./conf \
    "CREATE BROADCAST TABLE RULE t_dict"
  shardkeeper rules apply --database sharding_db --server http://127.0.0.1:8080 \
    "CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1))"
  shardkeeper rules apply --conf ./conf \
    "ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=64, MAXIMUM_SIZE=512))"`,
	}
	t.register(cmd)
	apply := &cobra.Command{
		Use: "apply STATEMENT", Short: "Run one rule statement on --database, or a global rule statement", Args: args(1, 1, "STATEMENT"),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := t.check(); err != nil {
				return err
			}
			return applyRule(cmd.Context(), t, database, a[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	apply.Flags().StringVar(&database, "database", "", "the logical database the statement changes (none for a global rule statement)")
	cmd.AddCommand(apply)
	return cmd
}

// applyRule runs statement on database db (a global rule statement with db
// ""): through the node's HTTP API with --server, otherwise through
// rules.Apply on the registry, writing the layout of writeLayout.
func applyRule(ctx context.Context, t *target, db, statement string, w, errw io.Writer) error {
	st, err := families.Parse(statement)
	if err != nil {
		return distsql.Coded(err, statement)
	}
	global := rules.IsGlobal(st)
	switch {
	case !rules.Is(st):
		return errors.New("not a rule statement: rules apply runs " + rules.Statements())
	case global && db != "":
		return errors.New("a global rule statement changes no database: leave out --database")
	case !global && db == "":
		return errors.New("--database is required for a database rule statement")
	}
	if named := st.Scope().Database; named != "" && named != db {
		return fmt.Errorf("the statement names database %s, --database %s: give --database %s", named, db, named)
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
		path := "/api/v1/rules"
		if !global {
			path = "/api/v1/databases/" + url.PathEscape(db) + "/rules"
		}
		if err := c.do(ctx, "POST", path, map[string]string{"statement": statement}, &resp); err != nil {
			return err
		}
		warnings, changed = resp.Warnings, resp.Changed
	} else {
		rc, err := t.reg.repository(ctx)
		if err != nil {
			return err
		}
		if err := t.withRegistry(ctx, func(ctx context.Context, r registry.Repository) error {
			layout, err := writeLayout(ctx, rc, r)
			if err != nil {
				return err
			}
			out, err := rules.Apply(ctx, r, db, st, rules.Options{Layout: layout})
			warnings, changed = out.Warnings(db), out.Changed
			var unknown *dbconfig.UnknownDatabaseError
			if errors.As(err, &unknown) {
				return fmt.Errorf("Unknown database '%s'.", db)
			}
			return err
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
