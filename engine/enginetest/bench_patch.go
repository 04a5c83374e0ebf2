package enginetest

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// Spends as the record layer makes them with engine.Patch: a 4-byte counter
// near the record's start and a 37-byte output slot change in a record of
// 600..2000 bytes.
const (
	patchBenchMinSize = 600
	patchBenchMaxSize = 2000
	patchBenchSlot    = 37
	patchBenchBatch   = 64
)

// BenchSpendPatchVsPut measures a spend done two ways, as two
// sub-benchmarks of one run over the same records: "put" returns the
// whole new value as a Put (the update function copies the record and
// changes its two ranges, as the record layer did before Patch), "patch"
// returns the two ranges as an engine.Patch. Each sub-benchmark opens a
// fresh engine with open, loads n records, and times b.N spends of records
// drawn at random, in Update calls of 64; ns/op is per spend. The records
// have no delete-at-height, so an engine may log a spend as a patch of
// the value it replaces.
func BenchSpendPatchVsPut(b *testing.B, n int, open func(b *testing.B) engine.Engine) {
	for _, variant := range []string{"put", "patch"} {
		b.Run(variant, func(b *testing.B) {
			e := open(b)
			defer e.Close()
			rng := rand.New(rand.NewPCG(3, 4))
			terms := engine.Terms{ProducedAt: 1}
			for next := 0; next < n; {
				batch := make([]engine.Update, 0, 1000)
				for ; len(batch) < cap(batch) && next < n; next++ {
					v := make([]byte, patchBenchMinSize+rng.IntN(patchBenchMaxSize-patchBenchMinSize+1))
					for i := range v {
						v[i] = byte(rng.Uint32())
					}
					batch = append(batch, engine.Update{Key: BenchKey(uint32(next)), Fn: put(v, terms)})
				}
				benchApply(b, e, batch)
			}
			spend := spendByPut
			if variant == "patch" {
				spend = spendByPatch
			}
			batch := make([]engine.Update, 0, patchBenchBatch)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				batch = append(batch, engine.Update{Key: BenchKey(uint32(rng.IntN(n))), Fn: spend(uint32(i))})
				if len(batch) == cap(batch) || i == b.N-1 {
					benchApply(b, e, batch)
					batch = batch[:0]
				}
			}
		})
	}
}

// patchBenchEdits are spend i's ranges of a record of size bytes: the
// counter at offset 2 and the slot of one of the record's outputs.
func patchBenchEdits(i uint32, size int) []engine.Edit {
	slot := make([]byte, patchBenchSlot)
	for j := range slot {
		slot[j] = byte(i) + byte(j)
	}
	outputs := (size - 64) / patchBenchSlot
	return []engine.Edit{
		{Offset: 2, Bytes: binary.LittleEndian.AppendUint32(nil, i)},
		{Offset: 64 + int(i)%outputs*patchBenchSlot, Bytes: slot},
	}
}

// spendByPut copies the record, changes the spend's ranges and returns the
// copy as a Put.
func spendByPut(i uint32) engine.UpdateFunc {
	return func(current []byte) (engine.Mutation, error) {
		v := append(make([]byte, 0, len(current)), current...)
		for _, ed := range patchBenchEdits(i, len(current)) {
			copy(v[ed.Offset:], ed.Bytes)
		}
		return engine.Mutation{Action: engine.Put, Value: v, Terms: engine.Terms{ProducedAt: 1}}, nil
	}
}

// spendByPatch returns the spend's ranges as a Patch.
func spendByPatch(i uint32) engine.UpdateFunc {
	return func(current []byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Patch, Edits: patchBenchEdits(i, len(current)), Terms: engine.Terms{ProducedAt: 1}}, nil
	}
}
