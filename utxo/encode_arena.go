package utxo

import "sync"

// encodeArenaChunk is the size of the buffers an encodeArena carves records
// from: a block's set-mined encodes a few hundred KiB, a lone spend a few
// hundred bytes, and the chunks go back to a pool either way.
const encodeArenaChunk = 256 << 10

var encodeChunks = sync.Pool{New: func() any {
	b := make([]byte, 0, encodeArenaChunk)
	return &b
}}

// encodeArena holds the encodings of the records of one engine batch. An
// engine copies (or drops) every value before its Update returns
// (engine.UpdateFunc, and the conformance suite's copy test), so the
// buffers are reused once the batch is answered rather than each encoding
// being a fresh allocation that is garbage a moment later. An engine may
// run the update functions of one batch concurrently (Sozu, one goroutine
// per shard), so the arena is safe for concurrent use.
type encodeArena struct {
	mu     sync.Mutex
	chunks []*[]byte
}

// encoder is a record to encode: a decoded record.Record or a record.View.
type encoder interface {
	AppendEncode(dst []byte) []byte
}

// encode returns r's encoding, carved from the arena's current chunk; a
// record too large for what is left gets its own allocation.
func (a *encodeArena) encode(r encoder) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.chunks) == 0 {
		a.chunks = append(a.chunks, encodeChunks.Get().(*[]byte))
	}
	cur := a.chunks[len(a.chunks)-1]
	start := len(*cur)
	out := r.AppendEncode((*cur)[start:start])
	if len(out) > cap(*cur)-start {
		// It did not fit and append moved it; let the next record
		// start a new chunk.
		a.chunks = append(a.chunks, encodeChunks.Get().(*[]byte))
	} else {
		*cur = (*cur)[:start+len(out)]
	}
	// Capped, so an engine appending to a value can never write into the
	// encoding of the next record.
	return out[:len(out):len(out)]
}

// release returns the chunks to the pool; the encodings handed out must no
// longer be in use.
func (a *encodeArena) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.chunks {
		*c = (*c)[:0]
		encodeChunks.Put(c)
	}
	a.chunks = nil
}
