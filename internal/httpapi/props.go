package httpapi

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
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
		out = append(out, variable{Name: variableName(k.Name), Value: props.Value(k.Name)})
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
	key, ok := variableKey(name)
	if !ok {
		s.writeError(w, unsupportedVariable(strings.ToUpper(name)))
		return
	}
	s.writeJSON(w, variable{Name: variableName(key.Name), Value: s.cfg.Store.Current().Props.Value(key.Name)})
}

// handleSetProp is SET DIST VARIABLE {name} = {value}: the value is
// type-checked and the props are persisted as a new /props version; the
// answer comes once this node has applied it (bounded).
func (s *Server) handleSetProp(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	body, perr := readBody(w, r)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	key, ok := variableKey(name)
	if !ok {
		s.writeError(w, unsupportedVariable(name))
		return
	}
	value, perr := parseValueBody(body)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	canon, perr := checkVariableValue(key, value)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := metadata.SetProps(ctx, s.cfg.Repo, map[string]string{key.Name: canon}); err != nil {
		s.writeError(w, err)
		return
	}
	s.log.Info("dist variable set", "name", variableName(key.Name), "value", canon)
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	_, _ = s.cfg.Store.Wait(wctx, func(snap *metadata.Snapshot) bool { return snap.Props.Value(key.Name) == canon })
	s.writeJSON(w, variable{Name: variableName(key.Name), Value: canon})
}
