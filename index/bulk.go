package index

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/cockroachdb/pebble"
)

// DefaultFlushEvery is how many blocks a bulk import holds in memory
// between flushes when the caller does not say.
const DefaultFlushEvery = 1000

// maxHeldBytes flushes a bulk import before the changes it holds pass it,
// however few blocks they come from: they are memory the import holds.
// Blocks of 10,000 transactions of twenty outputs each (the bench's
// warm-up) reach it in about ten blocks.
const maxHeldBytes = 256 << 20

// HeapAllowance is the Go heap a process gives the address index beside
// its store's memory budget. A bulk import holds up to maxHeldBytes of
// changes, their sort entries while it writes them, up to maxCached
// balances and txAddresses values each, the pay-to-pubkey outputs it
// connected or loaded (maxLoadedP2PK), and the filter of the addresses
// with a balance (addressFilter, at most 306 MiB). In the bench's
// ten-million-UTXO chain they bring the process's live heap to 2.3 GB at
// its largest (its store alone: 0.5 GB); a process limited to the store's
// budget runs its garbage collector without pause instead.
const HeapAllowance = 2 << 30

// Bulk is an initial import that keeps addressBalance and txAddresses
// values in memory across blocks and writes them, with the blocks' other
// columns, in one atomic write (bulkWrites) every FlushEvery blocks, or
// sooner when the changes held pass maxHeldBytes. The bytes it leaves are
// exactly those of connecting the same blocks one by one. An import into
// an index that holds no such values yet (an initial import) knows every
// value there is while it keeps them all, so it reads none from the
// database until its kept values first pass their bound (maxCached);
// after that, its addressFilter still spares it looking for addresses
// it never paid. It knows, too, every pay-to-pubkey output it connected
// and has not seen spent, so it marks the inputs that spend them without
// reading the p2pk column (see workset.p2pk). An import into an index
// that has balances and marks already (the next block files, or a rerun
// after an interruption) starts with the filter of the addresses that
// have a balance and the pay-to-pubkey outputs the column marks, where
// they fit (fillAddressFilter, loadP2PKOutputs), and is spared the same
// reads.
//
// While a Bulk is open, the Index refuses ConnectBlock and DisconnectBlock
// (the Bulk has its own Disconnect); queries see the index as of the last
// flush. A crash loses the blocks since the last flush and nothing else:
// each flush is one atomic write. If Connect fails the in-memory values
// may be half-updated, so the Bulk is poisoned: it refuses further work
// and Close discards the blocks since the last flush.
type Bulk struct {
	ix         *Index
	ws         *workset
	held       *bulkWrites
	flushEvery int
	// flushBytes is maxHeldBytes (tests lower it).
	flushBytes int
	pending    int
	tip        uint32
	hasTip     bool
	win        window
	err        error
	loaded     Loaded
}

// Loaded is what a bulk import began with from an index that had
// balances: the addresses its filter took and the outputs the p2pk column
// marks that it loaded, each 0 when there were none or more than it
// takes.
type Loaded struct{ Addresses, P2PKOutputs int }

// Loaded says what the import began with.
func (bk *Bulk) Loaded() Loaded { return bk.loaded }

// BeginBulk starts a bulk import. flushEvery <= 0 means DefaultFlushEvery.
func (ix *Index) BeginBulk(flushEvery int) (*Bulk, error) {
	return ix.beginBulk(flushEvery, newAddressFilter(), maxLoadedP2PK)
}

// maxLoadedP2PK bounds the pay-to-pubkey outputs an import into an index
// that has some loads (loadP2PKOutputs): about 100 MB of memory at most.
const maxLoadedP2PK = 1 << 20

// beginBulk is BeginBulk with the import's address filter, empty, and the
// most pay-to-pubkey outputs it loads (tests make both small).
func (ix *Index) beginBulk(flushEvery int, filter *addressFilter, p2pkLimit int) (*Bulk, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.writable(); err != nil {
		return nil, err
	}
	if flushEvery <= 0 {
		flushEvery = DefaultFlushEvery
	}
	ws := newWorkset(ix)
	var err error
	if ws.allTxa, err = ix.columnEmpty(cfTxAddresses); err != nil {
		return nil, err
	}
	if ws.allBal, err = ix.columnEmpty(cfAddressBalance); err != nil {
		return nil, err
	}
	// An import that follows another (the next block files, or a rerun
	// after an interruption) finds the balances and marks its predecessor
	// wrote. Loading what proves an absence lets it, too, spare the
	// lookups of addresses it never paid and of the marks of inputs that
	// spend no pay-to-pubkey output.
	var loaded Loaded
	if ws.created, loaded.Addresses, err = ix.fillAddressFilter(filter); err != nil {
		return nil, err
	}
	if ws.allP2PK, err = ix.loadP2PKOutputs(ws.p2pk, p2pkLimit); err != nil {
		return nil, err
	}
	loaded.P2PKOutputs = len(ws.p2pk)
	bk := &Bulk{ix: ix, ws: ws, held: newBulkWrites(ix), flushEvery: flushEvery, flushBytes: maxHeldBytes, tip: ix.tip, hasTip: ix.hasTip, win: ix.win, loaded: loaded}
	ix.bulk = bk
	return bk, nil
}

// fillAddressFilter adds to f every address the index has a balance for
// and returns it and their number, or nil when they are more than f
// holds. Reading them takes about a second for every three million here;
// an index that once had more than a filter holds says so in its state
// (AddressesPastFilter), and is not read again for nothing.
func (ix *Index) fillAddressFilter(f *addressFilter) (*addressFilter, int, error) {
	if ix.state.AddressesPastFilter {
		return nil, 0, nil
	}
	n, full := 0, false
	err := ix.eachKey(cfAddressBalance, func(addrDesc []byte) bool {
		full = !f.add(addrDesc)
		n++
		return !full
	})
	if err != nil {
		return nil, 0, err
	}
	if full {
		return nil, 0, ix.addressesPastFilter()
	}
	return f, n, nil
}

// addressesPastFilter records that the index has more addresses than an
// addressFilter holds.
func (ix *Index) addressesPastFilter() error {
	ix.state.AddressesPastFilter = true
	return ix.storeState()
}

// loadP2PKOutputs adds to outputs every output the p2pk column marks as
// paying a pay-to-pubkey script, and reports whether it could: false, with
// outputs left empty, when there are more than limit. The column keeps an
// output's mark once it is spent, so outputs then holds spent ones too,
// which no input looks for again.
func (ix *Index) loadP2PKOutputs(outputs map[outpointKey]struct{}, limit int) (bool, error) {
	var damaged error
	err := ix.eachKey(cfP2PK, func(k []byte) bool {
		if len(k) != p2pkKeySize {
			damaged = corrupt(cfP2PK, slices.Clone(k), "a key of %d bytes", len(k))
			return false
		}
		if k[32] == 0 { // an output's mark, not an input's
			var txid chainhash.Hash
			copy(txid[:], k[:32])
			outputs[outpointKey{txid, int32(binary.BigEndian.Uint32(k[33:]))}] = struct{}{}
		}
		return len(outputs) <= limit
	})
	if err == nil {
		err = damaged
	}
	if err != nil || len(outputs) > limit {
		clear(outputs)
		return false, err
	}
	return true, nil
}

// eachKey calls fn with every key of column c, without its prefix, in
// order, until fn returns false. The key is valid only during the call.
func (ix *Index) eachKey(c column, fn func(k []byte) bool) error {
	return ix.eachEntry(c, c, func(k, _ []byte) bool { return fn(k[1:]) })
}

// eachEntry calls fn with every entry of the columns first through last,
// prefixed key and value, in key order, until fn returns false. Both are
// valid only during the call.
func (ix *Index) eachEntry(first, last column, fn func(k, v []byte) bool) error {
	lo, _ := first.bounds()
	_, hi := last.bounds()
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for ok := it.First(); ok && fn(it.Key(), it.Value()); ok = it.Next() {
	}
	return it.Close()
}

// columnEmpty reports whether column c holds no entry.
func (ix *Index) columnEmpty(c column) (bool, error) {
	empty := true
	err := ix.eachKey(c, func([]byte) bool {
		empty = false
		return false
	})
	return empty, err
}

// Connect adds the next block.
func (bk *Bulk) Connect(b *Block) error {
	ix := bk.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if bk.err != nil {
		return bk.err
	}
	if bk.hasTip && b.Height != bk.tip+1 {
		return fmt.Errorf("%w: tip is %d, block is %d", ErrNotNext, bk.tip, b.Height)
	}
	if err := ix.connect(bk.ws, bk.held, &bk.win, b); err != nil {
		bk.err = fmt.Errorf("index: bulk import stopped at block %d: %w", b.Height, err)
		return bk.err
	}
	bk.hasTip, bk.tip = true, b.Height
	bk.pending++
	if bk.pending >= bk.flushEvery || bk.held.Len() >= bk.flushBytes {
		return bk.flush()
	}
	return nil
}

// Disconnect removes the tip block, as Index.DisconnectBlock does, and
// the import goes on: it writes the blocks held so far, then the
// disconnection in a batch of its own, and the values it keeps in memory
// stay, changed as the disconnection changed them, so a reorganisation
// costs the import neither its kept balances nor a new start. A crash
// leaves the index at a block boundary, as after any flush. A block that
// is not the tip, or is older than the rollback window, is refused and
// the import goes on; a failure while disconnecting poisons the Bulk, as
// one of Connect does.
func (bk *Bulk) Disconnect(height uint32, hash chainhash.Hash) error {
	ix := bk.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if bk.err != nil {
		return bk.err
	}
	if err := bk.flush(); err != nil {
		return err
	}
	btxs, err := ix.tipBlockTxs(height, hash)
	if err != nil {
		return err
	}
	if err := ix.unindex(bk.ws, height, btxs); err != nil {
		bk.err = fmt.Errorf("index: bulk import stopped disconnecting block %d: %w", height, err)
		return bk.err
	}
	bk.hasTip, bk.tip, bk.win = ix.hasTip, ix.tip, ix.win
	return nil
}

// Flush writes the blocks held so far.
func (bk *Bulk) Flush() error {
	bk.ix.mu.Lock()
	defer bk.ix.mu.Unlock()
	if bk.err != nil {
		return bk.err
	}
	return bk.flush()
}

func (bk *Bulk) flush() error {
	if bk.pending == 0 {
		return nil
	}
	err := bk.ws.flush(bk.held)
	if err == nil {
		err = bk.held.commit()
	}
	bk.held.reset()
	if err != nil {
		bk.err = fmt.Errorf("index: bulk flush: %w", err)
		return bk.err
	}
	bk.pending = 0
	bk.ix.hasTip, bk.ix.tip, bk.ix.win = bk.hasTip, bk.tip, bk.win
	return nil
}

// Close flushes (unless poisoned) and hands the index back.
func (bk *Bulk) Close() error {
	bk.ix.mu.Lock()
	defer bk.ix.mu.Unlock()
	if bk.ix.bulk != bk {
		return ErrClosed
	}
	return bk.finish()
}

// finish is Close with the index lock held; Index.Close uses it too.
func (bk *Bulk) finish() error {
	err := bk.err
	if err == nil {
		err = bk.flush()
	}
	bk.held.close()
	bk.ix.bulk = nil
	if bk.err == nil {
		bk.err = ErrClosed
	}
	return err
}
