package config

import (
	"errors"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/snowflake"
)

// KeyGenerator is a SNOWFLAKE key generator of a database's sharding rule
// (keyGenerators), its ShardingSphere props parsed.
type KeyGenerator struct {
	Name      string
	Snowflake snowflake.Config // worker-id kept, so that the node can warn that cluster mode ignores it
}

// Snowflake returns the settings of the first SNOWFLAKE key generator of
// the databases' sharding rules (by database name, then generator name);
// with none, snowflake.DefaultConfig(). A nil c has none.
func (c *Config) Snowflake() snowflake.Config {
	if c != nil {
		for _, db := range c.Databases {
			if len(db.KeyGenerators) > 0 {
				return db.KeyGenerators[0].Snowflake
			}
		}
	}
	return snowflake.DefaultConfig()
}

// parseKeyGenerators reads the SNOWFLAKE key generators of the !SHARDING
// rule in the rules list n, sorted by name; a bad prop is reported with
// ShardingSphere's message at its line.
func parseKeyGenerators(p *problems, n *yaml.Node) []KeyGenerator {
	if n.Kind != yaml.SequenceNode {
		return nil
	}
	var gens []KeyGenerator
	for _, item := range n.Content {
		if item.Tag != "!SHARDING" {
			continue
		}
		kg := mapValue(item, "keyGenerators")
		if kg == nil || kg.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(kg.Content); i += 2 {
			name, gen := kg.Content[i].Value, kg.Content[i+1]
			if t := mapValue(gen, "type"); t == nil || t.Value != "SNOWFLAKE" {
				continue
			}
			field := "rules.!SHARDING.keyGenerators." + name + ".props"
			props := map[string]string{}
			at := gen
			if pn := mapValue(gen, "props"); pn != nil && pn.Kind == yaml.MappingNode {
				at = pn
				for j := 0; j+1 < len(pn.Content); j += 2 {
					props[pn.Content[j].Value] = pn.Content[j+1].Value
				}
			}
			c, err := snowflake.ParseProps(props)
			if err != nil {
				for _, e := range unjoin(err) {
					p.add(propNode(at, e), field, e.Error())
				}
				continue
			}
			gens = append(gens, KeyGenerator{Name: name, Snowflake: c})
		}
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i].Name < gens[j].Name })
	return gens
}

// unjoin splits an errors.Join.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// propNode is the value node of the prop a *snowflake.ConfigError names
// in props, else props itself.
func propNode(props *yaml.Node, err error) *yaml.Node {
	var ce *snowflake.ConfigError
	if errors.As(err, &ce) {
		if v := mapValue(props, ce.Field); v != nil {
			return v
		}
	}
	return props
}
