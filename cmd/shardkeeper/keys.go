package main

import (
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/httpapi"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

func newKeysCommand() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Distributed keys: next (from a running node), decode (offline)",
	}
	t.register(cmd)
	var count int
	next := &cobra.Command{
		Use:   "next [-n N]",
		Short: "Issue N new keys from a running node (--server, default the local node)",
		Long: `Issue N new Snowflake keys (1 to 10000) from a running node through its
HTTP API: --server, else $` + envServer + `, else the local node at ` + defaultHealthServer + `.
Issuing needs a node: a key needs a worker id held with a time reservation,
which only a running node has, so the registry flags do not apply.`,
		Example: `  shardkeeper keys next
  shardkeeper keys next -n 100 --server http://127.0.0.1:8080 -o json`,
		Args: args(0, 0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := t.check(); err != nil {
				return err
			}
			if count < 1 || count > httpapi.MaxKeysPerRequest {
				return usagef("-n %d: want 1 to %d keys", count, httpapi.MaxKeysPerRequest)
			}
			if !t.useServer() {
				if t.reg.confDir != "" || t.reg.repositoryType != "" || t.reg.serverLists != "" {
					return usagef("keys next needs a running node: pass --server URL (or set %s) of a node started with `shardkeeper serve --http ADDR`, not the registry flags.\n"+
						"The registry alone cannot issue keys: a key needs a worker id held with a time reservation, which only a running node has.", envServer)
				}
				t.server = defaultHealthServer
			}
			c, err := t.client()
			if err != nil {
				return err
			}
			var resp httpapi.Keys
			if err := c.get(cmd.Context(), "/api/v1/keys?count="+strconv.Itoa(count), &resp); err != nil {
				return err
			}
			tb := table{header: []string{"key"}}
			for _, k := range resp.Keys {
				tb.rows = append(tb.rows, []string{k})
			}
			return output(cmd.OutOrStdout(), t.output, tb, resp)
		},
	}
	next.Flags().IntVarP(&count, "count", "n", 1, "how many keys (1 to 10000)")

	var epoch string
	decode := &cobra.Command{
		Use:   "decode KEY...",
		Short: "Split keys into time, worker id and sequence (offline; with --server also the holder's instance id)",
		Long: `Split Snowflake keys into their fields: ((ms - epoch) << 22) | (worker << 12) | sequence.
Offline by default, with --epoch (ShardingSphere's 2016-11-01T00:00:00Z unless
the keys were made with another one). With --server the node decodes them and
names the instance that holds the worker id now.`,
		Example: `  shardkeeper keys decode 1190422418313265152
  shardkeeper keys decode 1190422418313265152 --epoch 2016-10-31T16:00:00Z -o json`,
		Args:        args(1, -1, "KEY..."),
		Annotations: map[string]string{annotationOffline: "true"},
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := t.check(); err != nil {
				return err
			}
			ep, err := parseEpoch(epoch)
			if err != nil {
				return err
			}
			keys := make([]int64, len(a))
			for i, s := range a {
				k, err := strconv.ParseInt(s, 10, 64)
				if err != nil || k < 0 {
					return usagef("KEY %q: want a non-negative decimal 64-bit integer", s)
				}
				keys[i] = k
			}
			var out []httpapi.KeyInfo
			if t.useServer() {
				c, err := t.client()
				if err != nil {
					return err
				}
				for _, k := range keys {
					var d httpapi.KeyInfo
					if err := c.get(cmd.Context(), "/api/v1/keys/"+strconv.FormatInt(k, 10), &d); err != nil {
						return err
					}
					out = append(out, d)
				}
			} else {
				for _, k := range keys {
					out = append(out, decodeKey(k, ep))
				}
			}
			tb := table{header: []string{"key", "time", "unix_millis", "worker_id", "sequence"}}
			if t.useServer() {
				tb.header = append(tb.header, "instance_id")
			}
			for _, d := range out {
				row := []string{d.Key, d.Time, strconv.FormatInt(d.UnixMillis, 10), strconv.FormatInt(d.WorkerID, 10), strconv.FormatInt(d.Sequence, 10)}
				if t.useServer() {
					row = append(row, d.InstanceID)
				}
				tb.rows = append(tb.rows, row)
			}
			if len(out) == 1 {
				return output(cmd.OutOrStdout(), t.output, tb, out[0])
			}
			return output(cmd.OutOrStdout(), t.output, tb, map[string]any{"keys": out})
		},
	}
	decode.Flags().StringVar(&epoch, "epoch", "2016-11-01T00:00:00Z", "the keys' epoch: RFC 3339 time or unix milliseconds")
	cmd.AddCommand(next, decode)
	return cmd
}

func decodeKey(k int64, epoch time.Time) httpapi.KeyInfo {
	p := snowflake.Decompose(k)
	at := p.Time(epoch)
	return httpapi.KeyInfo{
		Key:        strconv.FormatInt(k, 10),
		UnixMillis: at.UnixMilli(),
		Time:       at.Format("2006-01-02T15:04:05.000Z07:00"),
		WorkerID:   p.WorkerID,
		Sequence:   p.Sequence,
	}
}

// parseEpoch reads --epoch: RFC 3339 or unix milliseconds.
func parseEpoch(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return time.Time{}, usagef("--epoch %s: want a time at or after 1970-01-01T00:00:00Z", s)
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usagef("--epoch %q: want an RFC 3339 time (2016-11-01T00:00:00Z) or unix milliseconds (1477958400000)", s)
	}
	return t, nil
}

// annotationOffline marks a command (cobra's Annotations) that needs no
// node and no registry unless --server is given: keys decode. The doc
// examples' test runs such a command without the test's node.
const annotationOffline = "shardkeeper/offline"
