package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// EnvToken is the environment variable serve reads the API token from when
// no --token-file is given.
const EnvToken = "SHARDKEEPER_TOKEN"

// auth checks bearer tokens. The token's SHA-256 is compared in constant
// time, so neither its content nor its length leaks through timing.
type auth struct {
	sum       [sha256.Size]byte
	set       bool
	openReads bool
}

func newAuth(token string, openReads bool) auth {
	a := auth{openReads: openReads}
	if token != "" {
		a.sum, a.set = sha256.Sum256([]byte(token)), true
	}
	return a
}

const noTokenMessage = "this node has no API token, so it refuses every change: start serve with --token-file FILE or set " +
	EnvToken + ", then send Authorization: Bearer <token>"

// check returns nil when r may proceed: reads when they are open or carry
// the token, mutations only with the token. The scheme name "Bearer" is
// matched case-insensitively (RFC 9110 section 11.1).
func (a auth) check(r *http.Request, mutating bool) *sqlerr.Error {
	header := r.Header.Get("Authorization")
	if !mutating && a.openReads {
		return nil
	}
	if !a.set {
		if mutating {
			return refuse(sqlerr.Unauthenticated, "%s", noTokenMessage)
		}
		return refuse(sqlerr.Denied, "reads are closed on this node (--open-reads=false) and it has no API token: set one with --token-file or %s", EnvToken)
	}
	if header == "" {
		if mutating {
			return refuse(sqlerr.Unauthenticated, "this call changes the cluster: send Authorization: Bearer <token>")
		}
		return refuse(sqlerr.Denied, "reads are closed on this node (--open-reads=false): send Authorization: Bearer <token>")
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return refuse(sqlerr.Unauthenticated, "the Authorization header must be \"Bearer <token>\"")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(sum[:], a.sum[:]) != 1 {
		return refuse(sqlerr.Unauthenticated, "invalid API token")
	}
	return nil
}
