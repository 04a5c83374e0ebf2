package index

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Footprint is what the index holds and what writing it has cost since
// Open: the benchmark's measure of the index.
type Footprint struct {
	// LiveBytes are the keys and values of every entry of Blockbook's
	// columns: their logical size. Keys are counted without the prefix
	// byte that stands in for the column family (see the package doc);
	// the internal state is left out.
	LiveBytes uint64
	// Entries is the number of those entries.
	Entries uint64
	// Digest is the SHA-256 of those entries in key order, each as its
	// prefixed key and its value, both preceded by their length (uvarint):
	// two indexes of the same blocks have the same digest.
	Digest string
	// ElectrumBytes are the keys and values of the Electrum columns
	// (scripts and p2pk), counted as LiveBytes are. They are outside the
	// digest: a disconnected block leaves its entries there (see
	// cfScripts), so an index that saw a reorganisation holds more of
	// them than one built from the final chain alone. LiveBytes plus
	// ElectrumBytes is the index's minimal live data.
	ElectrumBytes uint64
	// CommittedBytes are the bytes of the batches the index committed since
	// Open (Pebble's WAL bytes in: keys, values and their framing) and the
	// keys and values its bulk flushes handed over as tables, and
	// WrittenBytes what Pebble wrote to disk for them: the log, the flushed
	// memtables, the tables taken in and the compactions' output.
	CommittedBytes, WrittenBytes uint64
}

// Footprint walks the index's columns and reads Pebble's write counters.
// A bulk import's unwritten blocks are not in it.
func (ix *Index) Footprint() (Footprint, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.db == nil {
		return Footprint{}, ErrClosed
	}
	var fp Footprint
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	err := ix.eachEntry(cfHeight, cfTxAddresses, func(k, v []byte) bool {
		fp.Entries++
		fp.LiveBytes += uint64(len(k) - 1 + len(v))
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(k)))])
		h.Write(k)
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(v)))])
		h.Write(v)
		return true
	})
	if err != nil {
		return fp, err
	}
	fp.Digest = hex.EncodeToString(h.Sum(nil))
	err = ix.eachEntry(cfScripts, cfP2PK, func(k, v []byte) bool {
		fp.ElectrumBytes += uint64(len(k) - 1 + len(v))
		return true
	})
	if err != nil {
		return fp, err
	}
	m := ix.db.Metrics()
	total := m.Total() // its flushes count the log's bytes and the tables taken in
	fp.CommittedBytes = m.WAL.BytesIn + ix.ingestedBytes
	fp.WrittenBytes = total.BytesFlushed + total.BytesCompacted
	return fp, nil
}
