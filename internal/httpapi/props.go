package httpapi

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
)

// variable is one row of SHOW DIST VARIABLE(S).
type variable struct {
	Name  string `json:"variable_name"`
	Value string `json:"variable_value"`
}

// cachedConnections is the extra row SHOW DIST VARIABLES shows; a node
// without SQL sessions has none.
const cachedConnections = "cached_connections"

func (s *Server) variables(props config.Props) []variable {
	out := make([]variable, 0, len(config.KnownProps)+1)
	for _, k := range config.KnownProps {
		out = append(out, variable{Name: distvar.VariableName(k.Name), Value: props.Value(k.Name)})
	}
	out = append(out, variable{Name: cachedConnections, Value: "0"})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// handleProps is SHOW DIST VARIABLES: every property with its value
// (default when unset), sorted by name.
func (s *Server) handleProps(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, struct {
		Props []variable `json:"props"`
	}{s.variables(s.cfg.Store.Current().Props)})
}

// handleProp is SHOW DIST VARIABLE WHERE NAME = {name}: the name is
// upper-cased, as ShardingSphere does, so errors show it that way.
func (s *Server) handleProp(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if strings.EqualFold(name, cachedConnections) {
		s.writeJSON(w, variable{Name: cachedConnections, Value: "0"})
		return
	}
	key, ok := distvar.Lookup(name)
	if !ok {
		s.writeError(w, distvar.UnsupportedVariable(strings.ToUpper(name)))
		return
	}
	s.writeJSON(w, variable{Name: distvar.VariableName(key.Name), Value: s.cfg.Store.Current().Props.Value(key.Name)})
}

// setVariable is the answer to SET DIST VARIABLE: the variable with its
// canonical value, the /props version that holds it and which nodes
// confirmed applying it (distvar.Outcome), with the console's warnings.
type setVariable struct {
	variable
	Version         int      `json:"version"`
	Applied         []string `json:"applied"`
	Pending         []string `json:"pending"`
	Unacknowledging []string `json:"unacknowledging"`
	Warnings        []string `json:"warnings,omitempty"`
}

// handleSetProp is SET DIST VARIABLE {name} = {value}, through
// distvar.Set as the consoles and the CLI run it: the same names, the
// same canonical values and errors, and the answer comes once every
// online shardkeeper node confirmed applying the new /props version, or
// after distvar.DefaultTimeout with the nodes that did not in pending
// (and in warnings), and once this node's view has it.
func (s *Server) handleSetProp(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	body, perr := readBody(w, r)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	if _, err := distvar.Property(name); err != nil {
		s.writeError(w, err)
		return
	}
	value, perr := parseValueBody(body)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), distvar.DefaultTimeout+10*time.Second)
	defer cancel()
	out, err := distvar.Set(ctx, s.cfg.Repo, name, value, distvar.Options{})
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.log.Info("dist variable set", "name", distvar.VariableName(out.Key), "value", out.Value, "version", out.Version, "pending", out.Pending)
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	_, _ = s.cfg.Store.Wait(wctx, func(snap *metadata.Snapshot) bool { return snap.PropsVersion >= out.Version })
	s.writeJSON(w, setVariable{variable: variable{Name: distvar.VariableName(out.Key), Value: out.Value}, Version: out.Version,
		Applied: out.Applied, Pending: out.Pending, Unacknowledging: out.Unacknowledging, Warnings: out.Warnings()})
}
