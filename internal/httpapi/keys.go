package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// keyBuf is a pooled scratch space for one keys request.
type keyBuf struct {
	ids []int64
	out []byte
}

var keyBufs = sync.Pool{New: func() any { return &keyBuf{ids: make([]int64, 0, 16), out: make([]byte, 0, 512)} }}

// maxKeyWait bounds how long a keys request waits for a time reservation.
const maxKeyWait = 5 * time.Second

// Keys is GET /api/v1/keys?count=N's answer: the worker id that stamped
// the keys and the keys as decimal strings (JSON numbers lose precision
// above 2^53 in JavaScript), in increasing order.
type Keys struct {
	WorkerID int      `json:"workerId"`
	Keys     []string `json:"keys"`
}

// handleKeys is GET /api/v1/keys?count=N: a Keys, {"workerId":W,"keys":["..."]}.
// It appends decimal strings into a pooled buffer: no reflection, no
// per-key allocation.
func (s *Server) handleKeys(w http.ResponseWriter, r *http.Request) {
	n, perr := parseCount(r.URL.RawQuery)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	if ok, why := s.admits(); !ok {
		s.writeError(w, refuse(sqlerr.Unavailable, "%s", why))
		return
	}
	buf := keyBufs.Get().(*keyBuf)
	defer func() {
		if cap(buf.ids) <= MaxKeysPerRequest && cap(buf.out) <= 32*MaxKeysPerRequest {
			keyBufs.Put(buf)
		}
	}()
	ctx, cancel := context.WithTimeout(r.Context(), maxKeyWait)
	ids, err := s.cfg.Node.AppendIDs(ctx, buf.ids[:0], n)
	cancel()
	buf.ids = ids[:0]
	if err != nil {
		msg := err.Error()
		if !errors.Is(err, cluster.ErrNotIssuing) {
			msg = "not issuing keys: " + msg
		}
		s.writeError(w, refuse(sqlerr.Unavailable, "%s", msg))
		return
	}
	out := append(buf.out[:0], `{"workerId":`...)
	out = strconv.AppendInt(out, snowflake.Decompose(ids[0]).WorkerID, 10)
	out = append(out, `,"keys":[`...)
	for i, k := range ids {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = strconv.AppendInt(out, k, 10)
		out = append(out, '"')
	}
	out = append(out, "]}\n"...)
	buf.out = out[:0]
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Cache-Control"] = noStore
	_, _ = w.Write(out)
}

// KeyInfo is GET /api/v1/keys/{key}'s answer: the key's fields and, when
// this node saw it, the instance that held the worker id at its time.
type KeyInfo struct {
	Key        string `json:"key"`
	UnixMillis int64  `json:"unixMillis"`
	Time       string `json:"time"`
	WorkerID   int64  `json:"workerId"`
	Sequence   int64  `json:"sequence"`
	InstanceID string `json:"instanceId,omitempty"`
}

// handleKey decodes a key: its time, worker id, sequence and, when this
// node saw it, the instance that held the worker id at that time.
func (s *Server) handleKey(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("key")
	k, perr := parseKey(raw)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	p := snowflake.Decompose(k)
	ms := p.Millis + s.epochMs
	info := KeyInfo{
		Key:        strconv.FormatInt(k, 10),
		UnixMillis: ms,
		Time:       time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z"),
		WorkerID:   p.WorkerID,
		Sequence:   p.Sequence,
		InstanceID: s.history.holderAt(int(p.WorkerID), ms),
	}
	s.writeJSON(w, info)
}
