package metadata

import (
	"bytes"
	"runtime"
	"sync"

	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// minDecodeAhead is the smallest batch whose table versions are decoded
// ahead on several goroutines: a node loading a database, or a watch
// delivering a large import. Smaller batches decode as they apply.
const minDecodeAhead = 256

// maxDecodeWorkers bounds the goroutines that decode ahead.
const maxDecodeWorkers = 8

// decodedTable is a table version decoded ahead: the value it was decoded
// from, and the table or the error.
type decodedTable struct {
	data  []byte
	table datasource.Table
	err   error
}

// decodeTablesAhead decodes, on up to GOMAXPROCS goroutines (at most
// maxDecodeWorkers), the table versions of events that the mirror holds as
// the active version of their table, and returns them by the table's node
// key; nil when the batch is smaller than minDecodeAhead or one goroutine
// is all there is. decodeTable is a pure function of the table's name and
// value, so that applying the batch in order with these results (set
// checks that the value is the one decoded) is what decoding each in turn
// would give; the time of a load of thousands of tables is divided by the
// cores, the CPU time is the same.
func (a *applier) decodeTablesAhead(events []registry.Event) map[string]decodedTable {
	workers := min(runtime.GOMAXPROCS(0), maxDecodeWorkers)
	if len(events) < minDecodeAhead || workers < 2 {
		return nil
	}
	type job struct {
		node, name string
		data       []byte
	}
	var jobs []job
	for _, ev := range events {
		if ev.Type != registry.EventPut {
			continue
		}
		k, ok := paths.ParseKey(ev.KV.Key)
		if !ok || k.Kind != paths.KindTable || k.Leaf != paths.VersionsName {
			continue
		}
		cur, ok := a.mirror[ev.KV.Key]
		if !ok || !bytes.Equal(cur.Value, ev.KV.Value) {
			continue // rewritten later in the batch: that write is decoded when applied
		}
		jobs = append(jobs, job{node: k.Node, name: k.Name, data: ev.KV.Value})
	}
	if len(jobs) < minDecodeAhead {
		return nil
	}
	out := make([]decodedTable, len(jobs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(jobs); i += workers {
				t, err := decodeTable(jobs[i].name, jobs[i].data)
				out[i] = decodedTable{data: jobs[i].data, table: t, err: err}
			}
		}()
	}
	wg.Wait()
	ahead := make(map[string]decodedTable, len(jobs))
	for i, j := range jobs {
		ahead[j.node] = out[i]
	}
	return ahead
}

// tableOf decodes table version data of table node k: the result decoded
// ahead when it was decoded from the same value, else now.
func (a *applier) tableOf(k paths.Key, data []byte) (datasource.Table, error) {
	if r, ok := a.ahead[k.Node]; ok && bytes.Equal(r.data, data) {
		return r.table, r.err
	}
	return decodeTable(k.Name, data)
}
