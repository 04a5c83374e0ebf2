package index

import (
	"testing"
)

// BenchmarkImport imports mainnet blocks 0..14131 block by block and in
// bulk; the ratio of the two is the gain of bulk mode. "sync" commits
// every block with fsync (the ConnectBlock default); "nosync" isolates
// the work saved by keeping balances in memory.
//
//	go test -run '^$' -bench Import -benchtime 1x ./index/
func BenchmarkImport(b *testing.B) {
	chain := mainnetChain(b)
	benchImport(b, chain)
}

// BenchmarkImportSynthetic is a spend-heavy chain with a few busy
// addresses holding many utxos, where block-by-block connect rewrites the
// same large addressBalance values every block and bulk once per flush.
func BenchmarkImportSynthetic(b *testing.B) {
	benchImport(b, genChain(7, 3000))
}

func benchImport(b *testing.B, chain []*Block) {
	run := func(b *testing.B, opts Options, bulk int) {
		for i := 0; i < b.N; i++ {
			ix := openTest(b, b.TempDir(), opts)
			if bulk == 0 {
				connectAll(b, ix, chain)
			} else if err := connectBulk(b, ix, bulk, chain).Close(); err != nil {
				b.Fatal(err)
			}
			if err := ix.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(chain))*float64(b.N)/b.Elapsed().Seconds(), "blocks/s")
	}
	b.Run("normal-sync", func(b *testing.B) { run(b, Options{}, 0) })
	b.Run("normal-nosync", func(b *testing.B) { run(b, Options{NoSync: true}, 0) })
	b.Run("bulk-sync", func(b *testing.B) { run(b, Options{}, DefaultFlushEvery) })
	b.Run("bulk-nosync", func(b *testing.B) { run(b, Options{NoSync: true}, DefaultFlushEvery) })
}
