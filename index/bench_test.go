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

// BenchmarkImportNextFiles times a bulk import of the second half of a
// chain that pays mostly new addresses (freshAddressesChain), into the
// index a bulk import of its first half left. "continued" is that import
// going on; "next" is a new one, as the next block files' import (or an
// interrupted import's rerun) is, which starts from the index alone:
// the ratio of the two is what it costs not to hold what the first
// import kept. reads/op counts its lookups of balances and txAddresses
// values and of pay-to-pubkey marks.
//
//	go test -run '^$' -bench ImportNextFiles -benchtime 1x ./index/
func BenchmarkImportNextFiles(b *testing.B) {
	chain := freshAddressesChain(1500, 1000)
	first, second := chain[:len(chain)/2], chain[len(chain)/2:]
	for _, next := range []bool{false, true} {
		name := "continued"
		if next {
			name = "next"
		}
		b.Run(name, func(b *testing.B) {
			var reads lookups
			for range b.N {
				b.StopTimer()
				dir := b.TempDir()
				ix := openTest(b, dir, Options{NoSync: true})
				bk := connectBulk(b, ix, DefaultFlushEvery/10, first)
				if next {
					if err := bk.Close(); err != nil {
						b.Fatal(err)
					}
					if err := ix.Close(); err != nil {
						b.Fatal(err)
					}
					ix = openTest(b, dir, Options{NoSync: true})
				}
				b.StartTimer()
				if next {
					bk = connectBulk(b, ix, DefaultFlushEvery/10, nil)
				}
				before := bk.ws.reads
				connectThrough(b, bk, second)
				if err := bk.Close(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				reads = lookups{bk.ws.reads.txAddresses - before.txAddresses, bk.ws.reads.balances - before.balances, bk.ws.reads.marks - before.marks}
				if err := ix.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(second)*b.N)/b.Elapsed().Seconds(), "blocks/s")
			b.ReportMetric(float64(reads.balances), "balance-reads/op")
			b.ReportMetric(float64(reads.txAddresses), "txaddresses-reads/op")
			b.ReportMetric(float64(reads.marks), "p2pk-reads/op")
		})
	}
}
