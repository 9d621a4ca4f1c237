package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// EpochUnknown is the epoch of keys that may be of either of two epochs: a
// batch issued while the node acquired its worker id again.
const EpochUnknown int64 = math.MaxInt64

// An epoch marker is a record of a keys file that is not a key (keys are
// never negative): the top bit set and the epoch of the keys after it in
// the other 63 bits. KeyWriter starts every file with one.
func epochMarker(epoch int64) int64 {
	if epoch < 0 {
		epoch = EpochUnknown
	}
	return math.MinInt64 | epoch
}

// markerEpoch returns the epoch of a marker record (record < 0).
func markerEpoch(record int64) int64 { return record & math.MaxInt64 }

// KeyWriter appends keys to an incarnation's keys file. Append writes the
// keys with one write(2) before it returns, so a key the node hands out is
// on record even if the process is killed the next instant.
type KeyWriter struct {
	f      *os.File
	buf    []byte
	epoch  int64 // of the last marker written
	marked bool
}

// CreateKeyWriter creates (or appends to) the keys file at path.
func CreateKeyWriter(path string) (*KeyWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &KeyWriter{f: f}, nil
}

// Append records keys issued in epoch (EpochUnknown when they may be of
// two), after an epoch marker, in the same write, when the keys before
// them were of another epoch.
func (w *KeyWriter) Append(epoch int64, keys []int64) error {
	if len(keys) == 0 {
		return nil
	}
	w.buf = w.buf[:0]
	if !w.marked || epoch != w.epoch {
		w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(epochMarker(epoch)))
		w.epoch, w.marked = epoch, true
	}
	for _, k := range keys {
		w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(k))
	}
	_, err := w.f.Write(w.buf)
	return err
}

// Close closes the file.
func (w *KeyWriter) Close() error { return w.f.Close() }

// ReadKeys calls fn for each key of the keys file at path, in file order,
// with the epoch the marker before it names (EpochUnknown for keys before
// any marker, which a file KeyWriter wrote does not have). A trailing
// partial record is reported as an error after every whole key.
func ReadKeys(path string, fn func(epoch, key int64)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	epoch := EpochUnknown
	buf := make([]byte, 1<<20)
	for {
		n, err := io.ReadFull(f, buf)
		whole := n &^ 7
		for i := 0; i < whole; i += 8 {
			k := int64(binary.LittleEndian.Uint64(buf[i:]))
			if k < 0 {
				epoch = markerEpoch(k)
				continue
			}
			fn(epoch, k)
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, io.ErrUnexpectedEOF):
			if n > whole {
				return fmt.Errorf("truncated last record (%d of 8 bytes)", n-whole)
			}
			return nil
		default:
			return err
		}
	}
}
