package rules

import (
	"github.com/shardkeeper/shardkeeper/internal/rule/readwrite"
)

// ReadwriteGroups is the groups of readwrite-splitting rule content c:
// dataSourceGroups (5.5.x), dataSources in configs written for older
// releases; nil when it has none.
func ReadwriteGroups(c map[string]any) map[string]any {
	return readwrite.Groups(c)
}
