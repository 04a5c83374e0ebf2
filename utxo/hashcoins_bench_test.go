package utxo

import (
	"runtime"
	"testing"

	"github.com/utxostore/utxostore/coinstats"
)

// BenchmarkHashCoinsSmallBlock is the statistics of a block of the early
// chain (a coinbase and one spend, three coins), as the worker works
// them out with every processor offered.
func BenchmarkHashCoinsSmallBlock(b *testing.B) {
	script := make([]byte, 25)
	added := []coinstats.Coin{{Outpoint: coinstats.Outpoint{Vout: 0}, Value: 50e8, Script: script, Coinbase: true},
		{Outpoint: coinstats.Outpoint{Vout: 1}, Value: 10e8, Script: script}}
	removed := []coinstats.Coin{{Outpoint: coinstats.Outpoint{Vout: 2}, Value: 60e8, Script: script}}
	workers := runtime.GOMAXPROCS(0)
	for b.Loop() {
		hashCoins(added, removed, workers)
	}
}
