package metadata

import (
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/datasource"
)

func TestTableCodecKeepsNamesThatLookLikeOtherTypes(t *testing.T) {
	tb := datasource.Table{Name: "true", Columns: []datasource.Column{{Name: "123", TypeName: "null", DataType: 4}}, Indexes: []datasource.Index{{Name: "yes", Columns: []string{"1.5", "~"}}}}
	b := encodeTable(tb)
	got, err := decodeTable("true", b)
	if err != nil || got.Name != "true" || got.Columns[0].Name != "123" || got.Columns[0].TypeName != "null" || got.Indexes[0].Columns[1] != "~" {
		t.Fatalf("%s\n%+v %v", b, got, err)
	}
	if !strings.Contains(string(b), "name: \"true\"") {
		t.Fatalf("%s", b)
	}
}
