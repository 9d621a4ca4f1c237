package rule

import (
	"errors"
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// TestNamed checks CREATE, ALTER and DROP of named items under both case
// policies: what each writes or refuses, with upstream's codes.
func TestNamed(t *testing.T) {
	items := map[string]any{"t_order": true, "t_user": true}
	exact := Named{RuleType: "mask", Label: "Mask", Case: ExactCase}
	fold := Named{RuleType: "sharding", Label: "sharding", Kind: "sharding table", Case: FoldCase}
	for _, tc := range []struct {
		name string
		run  func() ([]string, error)
		want []string
		code int
	}{
		{"create new", func() ([]string, error) { return exact.Create("db", items, []string{"a", "b"}, false) }, []string{"a", "b"}, 0},
		{"create existing", func() ([]string, error) { return exact.Create("db", items, []string{"a", "t_order"}, false) }, nil, 10204},
		{"create existing, other case, exact", func() ([]string, error) { return exact.Create("db", items, []string{"T_ORDER"}, false) }, []string{"T_ORDER"}, 0},
		{"create existing, other case, fold", func() ([]string, error) { return fold.Create("db", items, []string{"T_ORDER"}, false) }, nil, 10204},
		{"create if not exists", func() ([]string, error) { return fold.Create("db", items, []string{"T_ORDER", "a"}, true) }, []string{"a"}, 0},
		{"create twice in one statement", func() ([]string, error) { return fold.Create("db", items, []string{"a", "A"}, true) }, nil, 10204},
		{"create a name with /", func() ([]string, error) { return fold.Create("db", items, []string{"a/b"}, false) }, nil, 10200},
		{"alter", func() ([]string, error) { return fold.Alter("db", items, []string{"T_USER"}) }, []string{"t_user"}, 0},
		{"alter missing", func() ([]string, error) { return exact.Alter("db", items, []string{"T_USER"}) }, nil, 10202},
		{"drop", func() ([]string, error) { return fold.Drop("db", items, []string{"T_USER", "t_user"}, false) }, []string{"t_user"}, 0},
		{"drop missing", func() ([]string, error) { return exact.Drop("db", items, []string{"x"}, false) }, nil, 10202},
		{"drop if exists", func() ([]string, error) { return exact.Drop("db", items, []string{"x"}, true) }, nil, 0},
	} {
		got, err := tc.run()
		var se *sqlerr.Error
		switch {
		case tc.code == 0 && (err != nil || !reflect.DeepEqual(got, tc.want)):
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		case tc.code != 0 && (!errors.As(err, &se) || int(se.Code) != tc.code):
			t.Errorf("%s: %v %v, want code %d", tc.name, got, err, tc.code)
		}
	}
}
