// Package arena is an append-only slice in fixed-size chunks, addressed by
// a 32-bit index. The benchmark's map reference and workload generator keep
// one element per UTXO in arenas: growing one never copies what it holds (a
// plain slice of 50 million elements would briefly need twice their size to
// double), and an index costs half a pointer.
package arena

// chunkBits sizes the chunks: 64 Ki elements.
const chunkBits = 16

// Arena holds elements of type T. The zero Arena is empty and ready.
type Arena[T any] struct {
	chunks [][]T
	n      uint32
}

// Len is the number of elements added.
func (a *Arena[T]) Len() uint32 { return a.n }

// Add appends v and returns its index.
func (a *Arena[T]) Add(v T) uint32 {
	if a.n>>chunkBits == uint32(len(a.chunks)) {
		a.chunks = append(a.chunks, make([]T, 1<<chunkBits))
	}
	a.chunks[a.n>>chunkBits][a.n&(1<<chunkBits-1)] = v
	a.n++
	return a.n - 1
}

// At returns the element of index i, which must be below Len. The pointer
// stays valid: chunks never move.
func (a *Arena[T]) At(i uint32) *T { return &a.chunks[i>>chunkBits][i&(1<<chunkBits-1)] }
