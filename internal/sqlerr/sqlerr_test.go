package sqlerr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// TestIsMatchesByCode: a refusal matches a sentinel with the same code
// and state, wrapped or not and whoever built it; a different code or
// state, or a sentinel without a code, does not.
func TestIsMatchesByCode(t *testing.T) {
	sentinel := &sqlerr.Error{Code: 17001, SQLState: "HY000", Message: "Worker ID assigned failed, which should be in [0, 1024)."}
	for _, tc := range []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"same value", sentinel, sentinel, true},
		{"another value with the code", &sqlerr.Error{Code: 17001, SQLState: "HY000", Message: "other text"}, sentinel, true},
		{"wrapped", fmt.Errorf("open: %w", &sqlerr.Error{Code: 17001, SQLState: "HY000"}), sentinel, true},
		{"another code", &sqlerr.Error{Code: 17002, SQLState: "HY000"}, sentinel, false},
		{"another state", &sqlerr.Error{Code: 17001, SQLState: "44000"}, sentinel, false},
		{"no code", &sqlerr.Error{Message: "bad"}, &sqlerr.Error{Message: "bad"}, false},
		{"cause", &sqlerr.Error{Code: 30000, Err: sqlerr.ErrPanicked}, sqlerr.ErrPanicked, true},
	} {
		if got := errors.Is(tc.err, tc.target); got != tc.want {
			t.Errorf("%s: errors.Is(%#v, %#v) = %v, want %v", tc.name, tc.err, tc.target, got, tc.want)
		}
	}
}

// TestKindHTTPStatus: each kind has its own status and reads back from it;
// a status no kind has is Invalid.
func TestKindHTTPStatus(t *testing.T) {
	want := map[sqlerr.Kind]int{sqlerr.Invalid: 400, sqlerr.NotFound: 404, sqlerr.Conflict: 409, sqlerr.Unauthenticated: 401, sqlerr.Denied: 403, sqlerr.Unavailable: 503, sqlerr.Internal: 500}
	for k, status := range want {
		if got := k.HTTPStatus(); got != status {
			t.Errorf("Kind %d: HTTPStatus() = %d, want %d", k, got, status)
		}
		if got := sqlerr.KindOfHTTPStatus(status); got != k {
			t.Errorf("KindOfHTTPStatus(%d) = %d, want %d", status, got, k)
		}
	}
	for _, status := range []int{405, 421, 502} {
		if got := sqlerr.KindOfHTTPStatus(status); got != sqlerr.Invalid {
			t.Errorf("KindOfHTTPStatus(%d) = %d, want Invalid", status, got)
		}
	}
}
