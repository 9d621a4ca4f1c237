package config

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/paths"
)

// ShardingSphere's prop names for the SNOWFLAKE key generator.
const (
	PropWorkerID                  = "worker-id"
	PropMaxVibrationOffset        = "max-vibration-offset"
	PropMaxTolerateTimeDifference = "max-tolerate-time-difference-milliseconds"
)

// ShardingSphere's defaults of the SNOWFLAKE props, which
// DefaultSnowflakeProps gives; they equal snowflake.DefaultConfig's (the
// daemon's tests compare the two).
const (
	DefaultMaxVibrationOffset        = 1
	DefaultMaxTolerateTimeDifference = 10 * time.Millisecond
)

// maxVibrationOffset is the largest max-vibration-offset: the 12-bit
// sequence's largest value.
const maxVibrationOffset = 4095

// SnowflakeProps are the props of a SNOWFLAKE key generator, checked, with
// ShardingSphere's defaults for the ones not given. The node turns them
// into its generator's settings; configuration does not know the
// generator.
type SnowflakeProps struct {
	// WorkerID is worker-id, in [0, 1023]; kept so that the node can warn
	// that cluster mode ignores it.
	WorkerID int64
	// MaxVibrationOffset is max-vibration-offset, in [0, 4095].
	MaxVibrationOffset int
	// MaxTolerateTimeDifference is
	// max-tolerate-time-difference-milliseconds, >= 0.
	MaxTolerateTimeDifference time.Duration
}

// DefaultSnowflakeProps returns the props of a SNOWFLAKE key generator
// given none: worker-id 0, max-vibration-offset 1,
// max-tolerate-time-difference-milliseconds 10.
func DefaultSnowflakeProps() SnowflakeProps {
	return SnowflakeProps{
		MaxVibrationOffset:        DefaultMaxVibrationOffset,
		MaxTolerateTimeDifference: DefaultMaxTolerateTimeDifference,
	}
}

// PropError is a SNOWFLAKE prop that ParseSnowflakeProps refuses. Reason
// is ShardingSphere's message ("Illegal max vibration offset.").
type PropError struct {
	Prop   string // the prop name, for example "max-vibration-offset"
	Value  string // the refused value as given
	Reason string // ShardingSphere's message
	Want   string // what would be accepted
}

func (e *PropError) Error() string {
	return fmt.Sprintf("%s %q: %s (want %s)", e.Prop, e.Value, e.Reason, e.Want)
}

// ParseSnowflakeProps returns DefaultSnowflakeProps with the SNOWFLAKE
// props found in props applied; other keys are ignored, as ShardingSphere
// does. Values are parsed as Java's Integer.parseInt does (decimal,
// optional sign, 32 bits). It reports every bad prop at once
// (errors.Join of *PropError), with ShardingSphere's messages: "Illegal
// max vibration offset.", "Illegal max tolerate time difference
// milliseconds." and, for worker-id, "Worker ID assigned failed, which
// should be in [0, 1024).".
func ParseSnowflakeProps(props map[string]string) (SnowflakeProps, error) {
	c := DefaultSnowflakeProps()
	var errs []error
	parse := func(key, reason, want string, ok func(int64) bool, set func(int64)) {
		s, present := props[key]
		if !present {
			return
		}
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil || !ok(v) {
			errs = append(errs, &PropError{Prop: key, Value: s, Reason: reason, Want: want})
			return
		}
		set(v)
	}
	parse(PropWorkerID, "Worker ID assigned failed, which should be in [0, 1024).", "an integer in [0, 1023]",
		func(v int64) bool { return v >= 0 && v <= paths.MaxWorkerID },
		func(v int64) { c.WorkerID = v })
	parse(PropMaxVibrationOffset, "Illegal max vibration offset.", "an integer in [0, 4095]",
		func(v int64) bool { return v >= 0 && v <= maxVibrationOffset },
		func(v int64) { c.MaxVibrationOffset = int(v) })
	parse(PropMaxTolerateTimeDifference, "Illegal max tolerate time difference milliseconds.", "an integer >= 0",
		func(v int64) bool { return v >= 0 },
		func(v int64) { c.MaxTolerateTimeDifference = time.Duration(v) * time.Millisecond })
	return c, errors.Join(errs...)
}

// KeyGenerator is a SNOWFLAKE key generator of a database's sharding rule
// (keyGenerators), its ShardingSphere props parsed.
type KeyGenerator struct {
	Name      string
	Snowflake SnowflakeProps
}

// Snowflake returns the props of the first SNOWFLAKE key generator of the
// databases' sharding rules (by database name, then generator name); with
// none, DefaultSnowflakeProps(). A nil c has none.
func (c *Config) Snowflake() SnowflakeProps {
	if c != nil {
		for _, db := range c.Databases {
			if len(db.KeyGenerators) > 0 {
				return db.KeyGenerators[0].Snowflake
			}
		}
	}
	return DefaultSnowflakeProps()
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
			c, err := ParseSnowflakeProps(props)
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

// propNode is the value node of the prop a *PropError names in props,
// else props itself.
func propNode(props *yaml.Node, err error) *yaml.Node {
	var pe *PropError
	if errors.As(err, &pe) {
		if v := mapValue(props, pe.Prop); v != nil {
			return v
		}
	}
	return props
}
