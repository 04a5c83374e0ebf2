package index

import (
	"errors"
	"fmt"
	"testing"
)

// Connecting and then disconnecting every block, one at a time, returns
// every column to the bytes it had before each connect.
func TestConnectDisconnectRoundTrip(t *testing.T) {
	for _, chain := range [][]*Block{goldenChain(), genChain(1, 80), genChain(2, 80), genChain(6, 200)} {
		ix := openTest(t, t.TempDir(), Options{RollbackBlocks: 1000, NoSync: true})
		var before []map[column]snapshot
		for _, b := range chain {
			before = append(before, dumpAll(t, ix))
			if err := ix.ConnectBlock(b); err != nil {
				t.Fatalf("connect %d: %v", b.Height, err)
			}
		}
		for i := len(chain) - 1; i >= 0; i-- {
			b := chain[i]
			if err := ix.DisconnectBlock(b.Height, b.Hash); err != nil {
				t.Fatalf("disconnect %d: %v", b.Height, err)
			}
			if d := diffColumns(before[i], dumpAll(t, ix)); d != "" {
				t.Fatalf("after disconnecting %d:\n%s", b.Height, d)
			}
		}
		if _, ok, _ := ix.BestBlock(); ok {
			t.Fatal("index not empty after disconnecting everything")
		}
		// And the emptied index takes the chain again.
		connectAll(t, ix, chain)
		ix.Close()
	}
}

// With a small window, a disconnect restores everything but the blockTxs
// entry its connect pruned, and refuses to go below the window.
func TestRollbackWindow(t *testing.T) {
	const keep = 5
	chain := genChain(3, 20)
	ix := openTest(t, t.TempDir(), Options{RollbackBlocks: keep, NoSync: true})
	defer ix.Close()
	var before []map[column]snapshot
	for _, b := range chain {
		before = append(before, dumpAll(t, ix))
		if err := ix.ConnectBlock(b); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(dump(t, ix, cfBlockTxs)); got != keep {
		t.Fatalf("blockTxs holds %d blocks, want %d", got, keep)
	}
	for i := len(chain) - 1; i >= len(chain)-keep; i-- {
		b := chain[i]
		if err := ix.DisconnectBlock(b.Height, b.Hash); err != nil {
			t.Fatalf("disconnect %d: %v", b.Height, err)
		}
		want := before[i]
		// The connects of blocks i.. pruned everything below len-keep.
		for h := 0; h < len(chain)-keep; h++ {
			delete(want[cfBlockTxs], fmt.Sprintf("%08x", h))
		}
		if d := diffColumns(want, dumpAll(t, ix)); d != "" {
			t.Fatalf("after disconnecting %d:\n%s", b.Height, d)
		}
	}
	b := chain[len(chain)-keep-1]
	if err := ix.DisconnectBlock(b.Height, b.Hash); !errors.Is(err, ErrRollbackTooDeep) {
		t.Fatalf("disconnect below the window: %v", err)
	}
}

func TestConnectDisconnectChecks(t *testing.T) {
	chain := goldenChain()
	ix := openTest(t, t.TempDir(), Options{})
	defer ix.Close()
	connectAll(t, ix, chain)
	if err := ix.ConnectBlock(chain[1]); !errors.Is(err, ErrNotNext) {
		t.Fatalf("reconnect: %v", err)
	}
	if err := ix.DisconnectBlock(0, chain[0].Hash); !errors.Is(err, ErrNotTip) {
		t.Fatalf("disconnect non-tip: %v", err)
	}
	if err := ix.DisconnectBlock(1, chain[0].Hash); !errors.Is(err, ErrNotTip) {
		t.Fatalf("disconnect wrong hash: %v", err)
	}
}

// Bulk import leaves exactly the bytes of block-by-block connect,
// whatever the flush interval and window, whether its flushes are batches
// (these blocks' flushes are small) or tables, from the first change or
// after 4 KiB in a batch, however many sorted runs a table merges (a run
// of 5 changes: a key's changes in different runs), and however many
// tables, one range of keys each, a flush writes.
func TestBulkMatchesConnect(t *testing.T) {
	chain := genChain(4, 120)
	for _, keep := range []int{7, 1000} {
		ix := openTest(t, t.TempDir(), Options{RollbackBlocks: keep, NoSync: true})
		connectAll(t, ix, chain)
		want := dumpAll(t, ix)
		ix.Close()
		for _, every := range []int{1, 13, 1000} {
			for _, held := range []bulkWrites{{}, {tableBytes: 1}, {tableBytes: 1, runLen: 5}, {tableBytes: 1, runLen: 5, tables: 1}, {tableBytes: 1, runLen: 5, tables: 7}, {tableBytes: 4 << 10, runLen: 5, tables: 3}} {
				bulkMatchesConnect(t, chain, want, keep, every, held)
			}
		}
	}
}

// bulkMatchesConnect imports chain in bulk, flushing every few blocks
// with held's settings, and compares the index with want.
func bulkMatchesConnect(t *testing.T, chain []*Block, want map[column]snapshot, keep, every int, held bulkWrites) {
	t.Helper()
	bx := openTest(t, t.TempDir(), Options{RollbackBlocks: keep, NoSync: true})
	defer bx.Close()
	bk, err := bx.BeginBulk(every)
	if err != nil {
		t.Fatal(err)
	}
	if held.tableBytes == 0 && bk.held.tableBytes == 0 {
		t.Fatal("a bulk import writes no table however large its flushes")
	}
	bk.held.tableBytes, bk.held.runLen, bk.held.tables = held.tableBytes, held.runLen, held.tables
	if err := bx.ConnectBlock(chain[0]); !errors.Is(err, ErrBulkActive) {
		t.Fatalf("ConnectBlock during bulk: %v", err)
	}
	for _, b := range chain {
		if err := bk.Connect(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffColumns(want, dumpAll(t, bx)); d != "" {
		t.Fatalf("keep %d flush %d tables from %d bytes (0: none), runs of %d, at most %d tables: bulk differs:\n%s", keep, every, held.tableBytes, held.runLen, held.tables, d)
	}
	// The index works normally afterwards.
	last := chain[len(chain)-1]
	if err := bx.DisconnectBlock(last.Height, last.Hash); err != nil {
		t.Fatal(err)
	}
}

// Index.Close flushes a bulk import that was not closed.
func TestCloseFlushesBulk(t *testing.T) {
	chain := genChain(5, 30)
	dir := t.TempDir()
	ix := openTest(t, dir, Options{NoSync: true})
	connectBulk(t, ix, 1000, chain)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openTest(t, dir, Options{})
	defer ix.Close()
	if bi, ok, err := ix.BestBlock(); err != nil || !ok || bi.Height != 29 {
		t.Fatalf("after reopen: %+v %v %v", bi, ok, err)
	}
}

// A bulk import that disconnects blocks (a reorganisation) and goes on
// leaves exactly the bytes of the same connections and disconnections made
// block by block: the values it keeps in memory follow the disconnections,
// and the blocks connected again spend outputs the disconnections
// restored.
func TestBulkDisconnectMatchesBlockByBlock(t *testing.T) {
	chain := genChain(7, 120)
	type step struct {
		disconnect int // blocks to disconnect before connecting up to next
		next       int
	}
	steps := []step{{0, 40}, {3, 60}, {1, 61}, {5, 90}, {2, 120}}
	replay := func(t *testing.T, connect func(*Block) error, disconnect func(*Block) error) {
		t.Helper()
		tip := 0 // blocks connected
		for _, s := range steps {
			for ; s.disconnect > 0; s.disconnect-- {
				tip--
				if err := disconnect(chain[tip]); err != nil {
					t.Fatalf("disconnect %d: %v", tip, err)
				}
			}
			for ; tip < s.next; tip++ {
				if err := connect(chain[tip]); err != nil {
					t.Fatalf("connect %d: %v", tip, err)
				}
			}
		}
	}
	for _, keep := range []int{7, 1000} {
		ix := openTest(t, t.TempDir(), Options{RollbackBlocks: keep, NoSync: true})
		replay(t, ix.ConnectBlock, func(b *Block) error { return ix.DisconnectBlock(b.Height, b.Hash) })
		want := dumpAll(t, ix)
		ix.Close()
		for _, every := range []int{1, 13, 1000} {
			bx := openTest(t, t.TempDir(), Options{RollbackBlocks: keep, NoSync: true})
			bk, err := bx.BeginBulk(every)
			if err != nil {
				t.Fatal(err)
			}
			replay(t, bk.Connect, func(b *Block) error { return bk.Disconnect(b.Height, b.Hash) })
			if err := bk.Close(); err != nil {
				t.Fatal(err)
			}
			if d := diffColumns(want, dumpAll(t, bx)); d != "" {
				t.Fatalf("keep %d flush %d: bulk differs:\n%s", keep, every, d)
			}
			bx.Close()
		}
	}
}

// A bulk import refuses to disconnect a block that is not its tip, and
// changes nothing doing so: it goes on.
func TestBulkDisconnectRefusesAnotherBlock(t *testing.T) {
	chain := genChain(8, 12)
	ix := openTest(t, t.TempDir(), Options{NoSync: true})
	defer ix.Close()
	bk := connectBulk(t, ix, 1000, chain[:10])
	if err := bk.Disconnect(8, chain[8].Hash); !errors.Is(err, ErrNotTip) {
		t.Fatalf("disconnect below the tip: %v", err)
	}
	if err := bk.Disconnect(9, chain[8].Hash); !errors.Is(err, ErrNotTip) {
		t.Fatalf("disconnect with another hash: %v", err)
	}
	if err := ix.DisconnectBlock(9, chain[9].Hash); !errors.Is(err, ErrBulkActive) {
		t.Fatalf("DisconnectBlock during bulk: %v", err)
	}
	for _, b := range chain[10:] {
		if err := bk.Connect(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if bi, ok, err := ix.BestBlock(); err != nil || !ok || bi.Height != 11 {
		t.Fatalf("after the bulk import: %+v %v %v", bi, ok, err)
	}
}

// A bulk import whose kept values pass its bound forgets only the excess
// at a flush, keeps the rest, and still leaves the bytes of block-by-block
// connect.
func TestBulkForgetsOnlyTheExcess(t *testing.T) {
	const keep = 20
	chain := genChain(9, 60)
	want := blockByBlockColumns(t, chain)
	bx := openTest(t, t.TempDir(), Options{NoSync: true})
	defer bx.Close()
	bk, err := bx.BeginBulk(10)
	if err != nil {
		t.Fatal(err)
	}
	bk.ws.keep = keep
	for _, b := range chain {
		if err := bk.Connect(b); err != nil {
			t.Fatal(err)
		}
		if bk.pending == 0 && (len(bk.ws.txa) != 0 || len(bk.ws.keptTxa) != keep || len(bk.ws.bal) > keep) {
			t.Fatalf("after the flush at block %d: %d transactions' values and %d balances kept, want %d and at most %d",
				b.Height, len(bk.ws.txa)+len(bk.ws.keptTxa), len(bk.ws.bal), keep, keep)
		}
	}
	if bk.ws.reads.total() == 0 {
		t.Fatal("a bulk import that forgot values read none from the database")
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffColumns(want, dumpAll(t, bx)); d != "" {
		t.Fatalf("bulk differs:\n%s", d)
	}
}

// A bulk import flushes when the changes it holds pass its byte bound,
// however few blocks they come from, and still leaves the bytes of
// block-by-block connect.
func TestBulkFlushesAtItsByteBound(t *testing.T) {
	const bound = 4 << 10
	chain := genChain(11, 60)
	want := blockByBlockColumns(t, chain)
	bx := openTest(t, t.TempDir(), Options{NoSync: true})
	defer bx.Close()
	bk, err := bx.BeginBulk(len(chain) + 1)
	if err != nil {
		t.Fatal(err)
	}
	bk.flushBytes = bound
	flushes := 0
	for _, b := range chain {
		before := bk.held.Len()
		if err := bk.Connect(b); err != nil {
			t.Fatal(err)
		}
		if bk.pending != 0 {
			if bk.held.Len() >= bound {
				t.Fatalf("after block %d the import holds %d bytes, past the bound of %d, unflushed", b.Height, bk.held.Len(), bound)
			}
			continue
		}
		flushes++
		if tip, ok, err := bx.BestBlock(); err != nil || !ok || tip.Height != b.Height {
			t.Fatalf("after the flush at block %d (%d bytes held before it) the index's tip is %+v (%v, %v)", b.Height, before, tip, ok, err)
		}
	}
	if flushes < 2 {
		t.Fatalf("%d flushes of a bulk import of %d blocks with a %d-byte bound: the bound flushed nothing", flushes, len(chain), bound)
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffColumns(want, dumpAll(t, bx)); d != "" {
		t.Fatalf("bulk differs:\n%s", d)
	}
}

// A bulk import into an empty index looks for no value in the database
// while it keeps them all; one into an index that holds values, or one
// that forgot some, looks for them there, and each leaves the bytes of
// block-by-block connect.
func TestBulkReadsOnlyWhatItMayNotHold(t *testing.T) {
	chain := genChain(10, 60)
	want := blockByBlockColumns(t, chain)

	bx := openTest(t, t.TempDir(), Options{NoSync: true})
	defer bx.Close()
	bk := connectBulk(t, bx, 7, chain[:30])
	if bk.ws.reads.total() != 0 {
		t.Fatalf("a bulk import into an empty index read %d values from the database", bk.ws.reads.total())
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	bk = connectBulk(t, bx, 7, chain[30:])
	if bk.ws.reads.total() == 0 {
		t.Fatal("a bulk import into an index holding values read none from the database")
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffColumns(want, dumpAll(t, bx)); d != "" {
		t.Fatalf("bulk differs:\n%s", d)
	}
}

// A transaction's value, and an address's balance, that a bulk import
// keeps across a flush, and a disconnection then deletes, are gone: a
// later block that spends the transaction's output, or pays the address,
// meets what connecting block by block meets, not the kept copies.
func TestBulkForgetsKeptValuesADisconnectionDeletes(t *testing.T) {
	payee, other := []byte{0x76, 0xa9, 0x42}, []byte{0x76, 0xa9, 0x43}
	coinbase := []Outpoint{{Coinbase: true}}
	block := func(height uint32, id byte, txs ...Tx) *Block {
		return &Block{Height: height, Hash: hashOf(id), Time: 1231006505 + 600*height, Size: 300, Txs: txs}
	}
	b0 := block(0, 1, Tx{ID: hashOf(2), Inputs: coinbase, Outputs: []Output{{Script: other, Value: 50}}})
	paid := Tx{ID: hashOf(4), Inputs: coinbase, Outputs: []Output{{Script: payee, Value: 50}}}
	b1 := block(1, 3, paid)
	b1b := block(1, 5, Tx{ID: hashOf(6), Inputs: coinbase, Outputs: []Output{{Script: payee, Value: 7}}})
	// b2 spends the output of the disconnected transaction, which the
	// index no longer knows (it keeps an empty input, as Blockbook does).
	b2 := block(2, 7, Tx{ID: hashOf(8), Inputs: coinbase, Outputs: []Output{{Script: other, Value: 50}}},
		Tx{ID: hashOf(9), Inputs: []Outpoint{{TxID: paid.ID}}, Outputs: []Output{{Script: other, Value: 40}}})

	want := blockByBlockColumns(t, []*Block{b0, b1b, b2})

	bx := openTest(t, t.TempDir(), Options{NoSync: true})
	defer bx.Close()
	bk, err := bx.BeginBulk(2) // flushes after b1, so b1's values are kept
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []*Block{b0, b1} {
		if err := bk.Connect(b); err != nil {
			t.Fatal(err)
		}
	}
	if _, kept := bk.ws.keptTxa[paid.ID]; !kept {
		t.Fatal("the paying transaction's value is not kept after the flush")
	}
	if err := bk.Disconnect(1, b1.Hash); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*Block{b1b, b2} {
		if err := bk.Connect(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffColumns(want, dumpAll(t, bx)); d != "" {
		t.Fatalf("bulk differs:\n%s", d)
	}
}

// newAddressesChain is eleven blocks: blocks 0-9 each pay ten addresses
// no block paid before, and block 10 pays all hundred again.
func newAddressesChain() []*Block {
	script := func(n int) []byte { return []byte{0x76, 0xa9, 0x01, byte(n)} }
	block := func(height int, pays ...int) *Block {
		tx := Tx{ID: hashOf(byte(height)), Inputs: []Outpoint{{Coinbase: true}}}
		for _, n := range pays {
			tx.Outputs = append(tx.Outputs, Output{Script: script(n), Value: 1000})
		}
		return &Block{Height: uint32(height), Hash: hashOf(byte(100 + height)), Time: 1231006505 + 600*uint32(height), Size: 300, Txs: []Tx{tx}}
	}
	var chain []*Block
	for h := range 10 {
		var pays []int
		for n := h * 10; n < h*10+10; n++ {
			pays = append(pays, n)
		}
		chain = append(chain, block(h, pays...))
	}
	var all []int
	for n := range 100 {
		all = append(all, n)
	}
	return append(chain, block(10, all...))
}

// A bulk import into an empty index that has forgotten balances looks in
// the database for none of the addresses it never gave one (its filter
// proves them new), looks for those it did, and leaves the bytes of
// block-by-block connect.
func TestBulkLooksUpNoAddressItNeverPaid(t *testing.T) {
	chain := newAddressesChain()
	want := blockByBlockColumns(t, chain)

	bx := openTest(t, t.TempDir(), Options{NoSync: true})
	defer bx.Close()
	bk, err := bx.BeginBulk(2)
	if err != nil {
		t.Fatal(err)
	}
	bk.ws.keep = 5
	connectThrough(t, bk, chain[:10])
	if bk.ws.allBal {
		t.Fatal("the import kept every balance; the test needs it to forget some")
	}
	if bk.ws.reads.total() != 0 {
		t.Fatalf("a bulk import paying only new addresses looked for %d values in the database", bk.ws.reads.total())
	}
	connectThrough(t, bk, chain[10:])
	if bk.ws.reads.total() == 0 {
		t.Fatal("a bulk import paying addresses whose balances it forgot looked for none in the database")
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffColumns(want, dumpAll(t, bx)); d != "" {
		t.Fatalf("bulk differs:\n%s", d)
	}

	// A filter that fills is dropped; the import then looks for new
	// addresses too, and leaves the same bytes.
	small := openTest(t, t.TempDir(), Options{NoSync: true})
	defer small.Close()
	if bk, err = small.BeginBulk(2); err != nil {
		t.Fatal(err)
	}
	bk.ws.keep = 5
	bk.ws.created = &addressFilter{first: 4, most: 1}
	connectThrough(t, bk, chain[:10])
	if bk.ws.created != nil || bk.ws.reads.total() == 0 {
		t.Fatalf("a bulk import whose filter filled still trusts it (%v), or looked for no value (%d)", bk.ws.created != nil, bk.ws.reads.total())
	}
	if !small.state.AddressesPastFilter {
		t.Fatal("a bulk import whose filter filled did not record it in the index's state")
	}
	connectThrough(t, bk, chain[10:])
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffColumns(want, dumpAll(t, small)); d != "" {
		t.Fatalf("bulk with a full filter differs:\n%s", d)
	}
}

// A bulk import into an index that has balances already (the next block
// files, or a rerun) starts with a filter of their addresses, so it looks
// in the database for none of the addresses it pays first, and for those
// the index had; when they are more than its filter holds, it looks for
// every address it pays. Each leaves the bytes of block-by-block connect.
func TestBulkIntoAnIndexWithBalancesLooksUpOnlyTheirs(t *testing.T) {
	chain := newAddressesChain()
	want := blockByBlockColumns(t, chain)
	for _, fits := range []bool{true, false} {
		filter := newAddressFilter()
		if !fits {
			filter = &addressFilter{first: 4, most: 1} // the index has 50 addresses
		}
		bx := openTest(t, t.TempDir(), Options{NoSync: true})
		defer bx.Close()
		if err := connectBulk(t, bx, 2, chain[:5]).Close(); err != nil {
			t.Fatal(err)
		}
		bk, err := bx.beginBulk(2, filter, maxLoadedP2PK)
		if err != nil {
			t.Fatal(err)
		}
		if bk.ws.allBal || (bk.ws.created != nil) != fits {
			t.Fatalf("filter fits %v: the import holds every balance (%v) or a filter (%v)", fits, bk.ws.allBal, bk.ws.created != nil)
		}
		connectThrough(t, bk, chain[5:10])
		if got := bk.ws.reads.balances; (got == 0) != fits {
			t.Fatalf("filter fits %v: paying only new addresses, the import looked for %d balances", fits, got)
		}
		before := bk.ws.reads.balances
		connectThrough(t, bk, chain[10:])
		if bk.ws.reads.balances == before {
			t.Fatalf("filter fits %v: paying the index's addresses again, the import looked for none", fits)
		}
		if err := bk.Close(); err != nil {
			t.Fatal(err)
		}
		if d := diffColumns(want, dumpAll(t, bx)); d != "" {
			t.Fatalf("filter fits %v: two bulk imports differ from block-by-block connect:\n%s", fits, d)
		}
	}
}

// An index whose addresses once overflowed an import's filter records it,
// and a later import, with room or not, does not read them into one.
func TestBulkRemembersAddressesPastTheFilter(t *testing.T) {
	chain := newAddressesChain()
	dir := t.TempDir()
	ix := openTest(t, dir, Options{NoSync: true})
	if err := connectBulk(t, ix, 2, chain[:5]).Close(); err != nil {
		t.Fatal(err)
	}
	bk, err := ix.beginBulk(2, &addressFilter{first: 4, most: 1}, maxLoadedP2PK)
	if err != nil {
		t.Fatal(err)
	}
	if bk.ws.created != nil {
		t.Fatal("a filter of four addresses took the index's fifty")
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openTest(t, dir, Options{NoSync: true})
	defer ix.Close()
	if bk, err = ix.BeginBulk(2); err != nil {
		t.Fatal(err)
	}
	if bk.ws.created != nil {
		t.Fatal("after reopening, an import read into a filter the addresses that overflowed one")
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
}
