package httpapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

//go:embed static/index.html static/openapi.yaml
var static embed.FS

// access says who may call a route.
type access int

const (
	public   access = iota // no token ever (probes, the page shell, the API description)
	read                   // open unless reads are closed
	mutation               // always the token
)

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	type route struct {
		method string
		h      http.HandlerFunc
	}
	byPath := map[string][]route{}
	var order []string
	handle := func(method, path string, acc access, h http.HandlerFunc) {
		if byPath[path] == nil {
			order = append(order, path)
		}
		byPath[path] = append(byPath[path], route{method, s.guard(acc, s.metrics.countRoute(method+" "+path, h))})
	}
	handle("GET", "/api/v1/keys", read, s.handleKeys)
	handle("GET", "/api/v1/keys/{key}", read, s.handleKey)
	handle("GET", "/api/v1/nodes", read, s.handleNodes)
	handle("GET", "/api/v1/nodes/self", read, s.handleSelf)
	handle("GET", "/api/v1/nodes/{id}", read, s.handleNode)
	handle("PUT", "/api/v1/nodes/{id}/state", mutation, s.handleState)
	handle("GET", "/api/v1/props", read, s.handleProps)
	handle("GET", "/api/v1/props/{name}", read, s.handleProp)
	handle("PUT", "/api/v1/props/{name}", mutation, s.handleSetProp)
	handle("GET", "/api/v1/databases", read, s.handleDatabases)
	handle("POST", "/api/v1/databases", mutation, s.handleCreateDatabase)
	handle("GET", "/api/v1/databases/{db}", read, s.handleDatabase)
	handle("DELETE", "/api/v1/databases/{db}", mutation, s.handleDropDatabase)
	handle("POST", "/api/v1/databases/{db}/rules", mutation, s.handleRuleStatement)
	handle("POST", "/api/v1/rules", mutation, s.handleGlobalRuleStatement)
	handle("GET", "/api/v1/readwrite-splitting/states", read, s.handleDataSourceStates)
	handle("GET", "/api/v1/statistics", read, s.handleStatistics)
	handle("PUT", "/api/v1/readwrite-splitting/{db}/{group}/{unit}/state", mutation, s.handleSetDataSourceState)
	handle("GET", "/api/v1/cluster/state", read, s.handleClusterState)
	handle("PUT", "/api/v1/cluster/lock", mutation, s.handleLock)
	handle("PUT", "/api/v1/cluster/unlock", mutation, s.handleUnlock)
	handle("POST", "/api/v1/registry/migrate", mutation, s.handleMigrate)
	handle("GET", "/api/v1/status", read, s.handleStatus)
	handle("GET", "/api/v1/events", read, s.handleEvents)
	handle("GET", "/api/v1/openapi.yaml", public, s.handleOpenAPI)
	handle("GET", "/metrics", read, s.metricsPage.ServeHTTP)
	handle("GET", "/livez", public, s.handleLivez)
	handle("GET", "/readyz", public, s.handleReadyz)
	handle("GET", "/{$}", public, s.handlePage)
	// One pattern per path, dispatching on the method itself, so that a
	// wrong method gets a JSON 405 rather than the mux's text one.
	for _, path := range order {
		routes := byPath[path]
		allow := make([]string, 0, len(routes))
		for _, rt := range routes {
			allow = append(allow, rt.method)
		}
		allowed := strings.Join(allow, ", ")
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			for _, rt := range routes {
				if r.Method == rt.method || (rt.method == "GET" && r.Method == "HEAD") {
					rt.h(w, r)
					return
				}
			}
			w.Header().Set("Allow", allowed)
			s.writeStatus(w, http.StatusMethodNotAllowed, 0, fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allowed))
		})
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, refuse(sqlerr.NotFound, "no such route: %s %s (see /api/v1/openapi.yaml)", r.Method, r.URL.Path))
	})
}

// guard checks the token for the route's access level.
func (s *Server) guard(acc access, h http.HandlerFunc) http.HandlerFunc {
	if acc == public {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.auth.check(r, acc == mutation); err != nil {
			s.writeError(w, err)
			return
		}
		h(w, r)
	}
}

func (s *Server) serveStatic(w http.ResponseWriter, name, contentType string) {
	b, err := static.ReadFile(name)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writePage(w, b, contentType, strings.HasSuffix(name, ".html"))
}

// writePage writes b; html adds the page's security headers.
func (s *Server) writePage(w http.ResponseWriter, b []byte, contentType string, html bool) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h["Cache-Control"] = noStore
	if html {
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; img-src 'self' data:")
		h.Set("X-Content-Type-Options", "nosniff")
	}
	_, _ = w.Write(b)
}

// statusMark is where handlePage puts the status document in the page, so
// that the page shows the node's status on load, before the event
// stream's first event.
const statusMark = "/*STATUS*/"

func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	page, err := static.ReadFile("static/index.html")
	if err != nil {
		s.writeError(w, err)
		return
	}
	// json.Marshal escapes <, > and &: the document cannot end the script element.
	doc, err := json.Marshal(s.status(r.Context()))
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writePage(w, bytes.Replace(page, []byte(statusMark), doc, 1), "text/html; charset=utf-8", true)
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	s.serveStatic(w, "static/openapi.yaml", "application/yaml; charset=utf-8")
}
