package daemon

import (
	"fmt"
	"sort"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// snowflakeConfig returns the generator settings of the first SNOWFLAKE key
// generator in the databases' sharding rules (by database and generator
// name), ShardingSphere's props parsed with its messages; with none, the
// defaults. A worker-id prop is kept so that the node can warn that cluster
// mode ignores it.
func snowflakeConfig(conf *config.Config) (snowflake.Config, error) {
	if conf == nil {
		return snowflake.DefaultConfig(), nil
	}
	for _, db := range conf.Databases {
		for _, rule := range db.Rules {
			if rule.Type != "sharding" {
				continue
			}
			gens, _ := rule.Content["keyGenerators"].(map[string]any)
			names := make([]string, 0, len(gens))
			for name := range gens {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				gen, _ := gens[name].(map[string]any)
				if typ, _ := gen["type"].(string); typ != "SNOWFLAKE" {
					continue
				}
				props := map[string]string{}
				if p, ok := gen["props"].(map[string]any); ok {
					for k, v := range p {
						props[k] = fmt.Sprint(v)
					}
				}
				c, err := snowflake.ParseProps(props)
				if err != nil {
					return snowflake.Config{}, fmt.Errorf("database %s: key generator %s: %w", db.Name, name, err)
				}
				return c, nil
			}
		}
	}
	return snowflake.DefaultConfig(), nil
}
