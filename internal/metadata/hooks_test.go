package metadata_test

import (
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
)

// The writers package metadata's own tests share with the tests of other
// packages (see helpers_test.go).
func init() {
	metadata.Commit = metadatatest.Commit
	metadata.CreateDatabase = metadatatest.CreateDatabase
	metadata.AlterGlobalRule = metadatatest.AlterGlobalRule
}
