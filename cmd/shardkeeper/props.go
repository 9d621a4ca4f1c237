package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/registry"
)

// distVariable is one row of SHOW DIST VARIABLES.
type distVariable struct {
	Name  string `json:"variable_name"`
	Value string `json:"variable_value"`
}

func propsTable(vars []distVariable) table {
	t := table{header: []string{"variable_name", "variable_value"}}
	for _, v := range vars {
		t.rows = append(t.rows, []string{v.Name, v.Value})
	}
	return t
}

// propKey resolves a name to read as SHOW DIST VARIABLE does
// (distvar.Lookup: "sql_show", "SQL_SHOW", "sql-show"). It returns the
// dashed property key, or error 12010.
func propKey(name string) (string, error) {
	k, ok := distvar.Lookup(name)
	if !ok {
		return "", fmt.Errorf("%s (code %d; see 'shardkeeper props get' for the names)", distvar.UnsupportedVariable(strings.ToUpper(name)).Message, distvar.CodeUnsupportedVariable)
	}
	return k.Name, nil
}

func newPropsCommand() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "props",
		Short: "Global properties: get, set (SHOW/SET DIST VARIABLE)",
		Long: `Global properties (/props), named as SHOW DIST VARIABLES names them
(sql_show; get accepts sql-show and SQL_SHOW too). Unset properties show
their defaults. A set is SET DIST VARIABLE, as the consoles and the HTTP
API run it: the name as SET takes it (sql_show, SQL_SHOW), the value
checked against the property's type and written in its canonical form as a
new /props version, which every node applies live; it returns once every
online shardkeeper node confirmed applying it (or after 3 s, naming the
nodes that did not).`,
		Example: `  shardkeeper props get --conf ./conf
  shardkeeper props get sql_show --server http://127.0.0.1:8080
  shardkeeper props set sql_show true --conf ./conf`,
	}
	t.register(cmd)
	completeNames := func(_ *cobra.Command, a []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(a) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, k := range config.KnownProps {
			names = append(names, distvar.VariableName(k.Name)+"\t"+k.Type.String()+", default "+orDefault(k.Default, `""`))
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	cmd.AddCommand(
		&cobra.Command{
			Use: "get [NAME...]", Short: "Show properties (all, or the named ones)", Args: args(0, -1, "[NAME...]"),
			ValidArgsFunction: completeNames,
			RunE: func(cmd *cobra.Command, a []string) error {
				if err := t.check(); err != nil {
					return err
				}
				// The node checks names itself (it also knows cached_connections).
				for _, n := range a {
					if _, err := propKey(n); err != nil && !t.useServer() {
						return err
					}
				}
				vars, err := getProps(cmd.Context(), t, a)
				if err != nil {
					return err
				}
				if len(a) == 1 && len(vars) == 1 {
					return output(cmd.OutOrStdout(), t.output, propsTable(vars), vars[0])
				}
				return output(cmd.OutOrStdout(), t.output, propsTable(vars), map[string]any{"props": vars})
			},
		},
		&cobra.Command{
			Use: "set NAME VALUE", Short: "Set one property (SET DIST VARIABLE NAME = VALUE)", Args: args(2, 2, "NAME VALUE"),
			ValidArgsFunction: completeNames,
			RunE: func(cmd *cobra.Command, a []string) error {
				if err := t.check(); err != nil {
					return err
				}
				return setProp(cmd.Context(), t, a[0], a[1], cmd.OutOrStdout(), cmd.ErrOrStderr())
			},
		},
	)
	return cmd
}

func getProps(ctx context.Context, t *target, names []string) ([]distVariable, error) {
	if t.useServer() {
		c, err := t.client()
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			var resp struct {
				Props []distVariable `json:"props"`
			}
			err := c.get(ctx, "/api/v1/props", &resp)
			return resp.Props, err
		}
		var out []distVariable
		for _, n := range names {
			name := n
			if key, err := propKey(n); err == nil {
				name = distvar.VariableName(key)
			}
			var v distVariable
			if err := c.get(ctx, "/api/v1/props/"+url.PathEscape(name), &v); err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	var props config.Props
	err := t.withRegistry(ctx, func(ctx context.Context, r registry.Repository) error {
		store, err := metadata.Load(ctx, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			return err
		}
		props = store.Current().Props
		return nil
	})
	if err != nil {
		return nil, err
	}
	return distVariables(props, names), nil
}

// distVariables lists names (all known properties plus any other set key
// when names is empty) with their values or defaults, sorted by name.
func distVariables(props config.Props, names []string) []distVariable {
	var keys []string
	if len(names) == 0 {
		for _, k := range config.KnownProps {
			keys = append(keys, k.Name)
		}
		for k := range props {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(a, b string) int { return strings.Compare(distvar.VariableName(a), distvar.VariableName(b)) })
	} else {
		for _, n := range names {
			k, _ := propKey(n)
			keys = append(keys, k)
		}
	}
	out := make([]distVariable, 0, len(keys))
	for _, k := range keys {
		out = append(out, distVariable{Name: distvar.VariableName(k), Value: props.Value(k)})
	}
	return out
}

// setProp is SET DIST VARIABLE name = value: through the node's HTTP API
// with --server, otherwise through distvar.Set on the registry, as the
// consoles run it. Either way the names, canonical values and errors are
// distvar's, and it returns once every online shardkeeper node confirmed
// applying the new /props version or distvar.DefaultTimeout passed (the
// nodes that did not are printed as warnings to stderr).
func setProp(ctx context.Context, t *target, name, value string, w, errw io.Writer) error {
	key, canon, err := distvar.Check(name, value)
	if err != nil {
		return err
	}
	var warnings []string
	if t.useServer() {
		c, err := t.client()
		if err != nil {
			return err
		}
		var resp struct {
			Warnings []string `json:"warnings"`
		}
		if err := c.put(ctx, "/api/v1/props/"+url.PathEscape(distvar.VariableName(key)), map[string]string{"value": canon}, &resp); err != nil {
			return err
		}
		warnings = resp.Warnings
	} else if err := t.withRegistry(ctx, func(ctx context.Context, r registry.Repository) error {
		out, err := distvar.Set(ctx, r, name, value, distvar.Options{})
		warnings = out.Warnings()
		return err
	}); err != nil {
		return err
	}
	for _, warning := range warnings {
		fmt.Fprintln(errw, "warning:", warning)
	}
	note := ""
	if k, _ := config.LookupProp(key); k.Reboot {
		note = " (takes effect after the nodes restart)"
	}
	_, err = fmt.Fprintf(w, "%s = %s%s\n", distvar.VariableName(key), canon, note)
	return err
}
