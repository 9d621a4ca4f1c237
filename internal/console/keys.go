package console

import (
	"context"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"strconv"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// SHOW KEY GENERATE ALGORITHM PLUGINS and SHOW NEXT KEYS.

// showKeyGenerateAlgorithmPlugins lists the key generate algorithms a
// sharding rule of the cluster may name, as ShardingSphere lists its
// built-in ones: type, type_aliases, description.
func (e *Engine) showKeyGenerateAlgorithmPlugins(_ context.Context, _ *Session, _ *distsql.ShowKeyGenerateAlgorithmPlugins) (*Result, error) {
	return &Result{Columns: textColumns("type", "type_aliases", "description"), Rows: [][]*string{
		strs("SNOWFLAKE", "", "Snowflake: 41-bit milliseconds, 10-bit worker id, 12-bit sequence; the worker id comes from the cluster"),
		strs("UUID", "", "Random UUID (version 4) as a string"),
	}}, nil
}

// showNextKeys is SHOW NEXT KEYS [COUNT n], shardkeeper's own statement:
// n keys (1 to MaxNextKeys) from the node's generator, one per row in
// increasing order, in a BIGINT column named key.
func (e *Engine) showNextKeys(ctx context.Context, _ *Session, st *distsql.ShowNextKeys) (*Result, error) {
	if st.Count < 1 || st.Count > MaxNextKeys {
		return nil, &sqlerr.Error{Code: 1210, SQLState: "HY000",
			Message: fmt.Sprintf("Incorrect arguments to SHOW NEXT KEYS: COUNT must be between 1 and %d, not %d", MaxNextKeys, st.Count)}
	}
	keys, err := e.d.Node.NextIDs(ctx, int(st.Count))
	if err != nil {
		return nil, err
	}
	rows := make([][]*string, len(keys))
	for i, k := range keys {
		rows[i] = []*string{str(strconv.FormatInt(k, 10))}
	}
	return &Result{Columns: []Column{{Name: "key", Type: Int64}}, Rows: rows}, nil
}
