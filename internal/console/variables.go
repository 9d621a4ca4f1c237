package console

import (
	"context"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
)

// SHOW DIST VARIABLES and SHOW DIST VARIABLE.

// temporaryProps are ShardingSphere's TemporaryConfigurationPropertyKey
// names: SHOW TEMP DIST VARIABLES lists them, SHOW DIST VARIABLES the
// others.
var temporaryProps = map[string]bool{
	"proxy-meta-data-collector-enabled":       true,
	"system-schema-metadata-assembly-enabled": true,
	"proxy-meta-data-collector-cron":          true,
	"instance-connection-enabled":             true,
	"metadata-identifier-case-sensitivity":    true,
}

// cachedConnections is the extra variable SHOW DIST VARIABLES shows: the
// backend connections the session holds, none on a shardkeeper node.
const cachedConnections = "cached_connections"

var variableColumns = textColumns("variable_name", "variable_value")

// showDistVariables lists ShardingSphere's configuration properties with
// their values (defaults when unset) and cached_connections, or with TEMP
// the temporary properties, filtered by LIKE and sorted by name.
func (e *Engine) showDistVariables(_ context.Context, _ *Session, st *distsql.ShowDistVariables) (*Result, error) {
	props := e.d.Metadata.Current().Props
	type row struct{ name, value string }
	var rows []row
	for _, k := range config.KnownProps {
		if temporaryProps[k.Name] == st.Temp {
			rows = append(rows, row{distvar.VariableName(k.Name), props.Value(k.Name)})
		}
	}
	if !st.Temp {
		rows = append(rows, row{cachedConnections, "0"})
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.name, b.name) })
	res := &Result{Columns: variableColumns}
	for _, r := range rows {
		if st.Like == nil || matchLike(*st.Like, r.name) {
			res.Rows = append(res.Rows, []*string{str(r.name), str(r.value)})
		}
	}
	return res, nil
}

// showDistVariable is one property (or cached_connections) by its DistSQL
// name, case-insensitive; any other name is error 12010 with the name
// upper-cased, as ShardingSphere reports it.
func (e *Engine) showDistVariable(_ context.Context, _ *Session, st *distsql.ShowDistVariable) (*Result, error) {
	if strings.EqualFold(st.Name, cachedConnections) {
		return &Result{Columns: variableColumns, Rows: [][]*string{{str(cachedConnections), str("0")}}}, nil
	}
	k, ok := distvar.Lookup(st.Name)
	if !ok {
		return nil, unsupportedVariable(strings.ToUpper(st.Name))
	}
	v := e.d.Metadata.Current().Props.Value(k.Name)
	return &Result{Columns: variableColumns, Rows: [][]*string{{str(distvar.VariableName(k.Name)), str(v)}}}, nil
}
