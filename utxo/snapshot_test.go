package utxo

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// coinsOf returns the store's set, grouped by transaction in outpoint
// order, each coin's script its own.
func coinsOf(t *testing.T, db *DB) [][]coinstats.Coin {
	t.Helper()
	var all []coinstats.Coin
	err := db.ForEachCoin(ctx, func(c *coinstats.Coin) error {
		own := *c
		own.Script = bytes.Clone(c.Script)
		all = append(all, own)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b coinstats.Coin) int { return a.Compare(b.Outpoint) })
	var txs [][]coinstats.Coin
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].TxID == all[i].TxID {
			j++
		}
		txs = append(txs, all[i:j])
		i = j
	}
	return txs
}

// loadSnapshot loads txs into a new store as the set after base.
func loadSnapshot(t *testing.T, opts Options, base SnapshotBase, txs [][]coinstats.Coin) *DB {
	t.Helper()
	db := newStore(t, opts)
	l, err := db.LoadSnapshot(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range txs {
		if err := l.Add(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSnapshotThenFollowTheChain: the set of a store that replayed Bitcoin's
// blocks 0 to 12000, loaded into a new store (records of two outputs, so
// that wide transactions take child records), carries on: blocks 12001 to
// 14131, which spend loaded coins, connect on it, and the two stores end
// with the same set, digest included. The loaded block itself cannot be
// disconnected, nor reorganised away.
func TestSnapshotThenFollowTheChain(t *testing.T) {
	blocks := chainBlocks(t, btcChain)
	const base = 12000
	full := newStore(t, Options{UtxoBatchSize: 2})
	connectAll(t, full, blocks[:base+1])
	txs := coinsOf(t, full)
	loaded := loadSnapshot(t, Options{UtxoBatchSize: 2}, SnapshotBase{Hash: blocks[base].Hash, Height: base}, txs)

	if got, want := coinsOf(t, loaded), txs; !slices.EqualFunc(got, want, func(a, b []coinstats.Coin) bool {
		return slices.EqualFunc(a, b, coinstats.Coin.Equal)
	}) {
		t.Fatal("the loaded store's coins differ from the snapshot's")
	}
	loadedSum, fullSum := summary(t, loaded), summary(t, full)
	if loadedSum.Utxos != fullSum.Utxos || loadedSum.Satoshis != fullSum.Satoshis || loadedSum.Digest != fullSum.Digest ||
		loadedSum.Height != base || loadedSum.Blocks != base+1 {
		t.Fatalf("loaded %+v\nreplayed %+v", loadedSum, fullSum)
	}
	mustVerify(t, loaded)

	connectAll(t, full, blocks[base+1:])
	connectAll(t, loaded, blocks[base+1:])
	loadedSum, fullSum = summary(t, loaded), summary(t, full)
	if loadedSum.Utxos != fullSum.Utxos || loadedSum.Satoshis != fullSum.Satoshis || loadedSum.Digest != fullSum.Digest {
		t.Fatalf("after the same blocks: loaded %+v\nreplayed %+v", loadedSum, fullSum)
	}
	mustVerify(t, loaded)

	// Back down to the snapshot's block, the two agree again (both have
	// pruned what was spent more than the retention ago); the loaded store
	// cannot go below it.
	for h := len(blocks) - 1; h > base; h-- {
		for _, db := range []*DB{full, loaded} {
			if err := db.DisconnectBlock(ctx, blocks[h]); err != nil {
				t.Fatalf("disconnecting block %d: %v", h, err)
			}
		}
	}
	if got, want := summary(t, loaded), summary(t, full); got.Digest != want.Digest || got.Utxos != want.Utxos {
		t.Fatalf("back at the snapshot's block: loaded %+v\nreplayed %+v", got, want)
	}
	before := summary(t, loaded)
	if err := loaded.DisconnectBlock(ctx, blocks[base]); !errors.Is(err, errNoBlock) {
		t.Fatalf("disconnecting the snapshot's block: %v", err)
	}
	if after := summary(t, loaded); after != before {
		t.Fatalf("the refused disconnection changed the store:\n%+v\nwas\n%+v", after, before)
	}

	// A reorganisation down through it is refused before the blocks above
	// it are disconnected.
	connectAll(t, loaded, blocks[base+1:base+4])
	before = summary(t, loaded)
	if err := reorg(loaded, reversed(blocks[base:base+4]), nil); !errors.Is(err, errNoBlock) {
		t.Fatalf("a reorganisation below the snapshot's block: %v", err)
	}
	if after := summary(t, loaded); after != before {
		t.Fatalf("the refused reorganisation left the store at\n%+v\nwas\n%+v", after, before)
	}
}

// TestSnapshotCoins: a loaded transaction answers Get with its outputs
// alone, spends of the outputs it has succeed, of those it lacks are
// UTXO_NOT_FOUND, and a loaded coinbase keeps its maturity.
func TestSnapshotCoins(t *testing.T) {
	txid := chainhash.Hash{0x42}
	cb := chainhash.Hash{0x43}
	coin := func(id chainhash.Hash, vout uint32, height uint32, coinbase bool) coinstats.Coin {
		return coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: id, Vout: vout}, Height: height, Coinbase: coinbase,
			Value: 1000 + uint64(vout), Script: script(id.String() + string(rune('a'+vout)))}
	}
	db := loadSnapshot(t, Options{}, SnapshotBase{Hash: chainhash.Hash{1}, Height: 500}, [][]coinstats.Coin{
		{coin(txid, 1, 300, false), coin(txid, 4, 300, false)},
		{coin(cb, 0, 450, true)},
	})
	meta, err := db.Get(ctx, txid, FieldTx, FieldOutputs)
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Outputs) != 5 || !meta.Outputs[1].Stored || meta.Outputs[0].Stored || !meta.Outputs[4].Stored ||
		len(meta.Tx.Msg.TxIn) != 0 || meta.Tx.Msg.TxOut[4].Value != 1004 || meta.BlockHeights[0] != 300 || meta.UnminedSince != 0 {
		t.Fatalf("meta %+v", meta)
	}
	spender := func(from chainhash.Hash, vout uint32) *chain.Tx {
		return spendTx("spender", []wire.OutPoint{{Hash: from, Index: vout}}, 1, 500)
	}
	if _, err := db.Spend(ctx, spender(txid, 4)); err != nil {
		t.Fatalf("spending a loaded coin: %v", err)
	}
	_, err = db.Spend(ctx, spender(txid, 2))
	wantCode(t, err, model.ErrUtxoNotFound)
	_, err = db.Spend(ctx, spender(cb, 0), WithBlockHeight(501))
	wantCode(t, err, model.ErrCoinbaseImmature)
	if _, err := db.Spend(ctx, spender(cb, 0), WithBlockHeight(550)); err != nil {
		t.Fatalf("spending a loaded coinbase at maturity: %v", err)
	}
}

// TestSnapshotRefusals: a store that holds a block, a coin above the
// snapshot's block, a transaction given twice and coins out of order are
// refused.
func TestSnapshotRefusals(t *testing.T) {
	base := SnapshotBase{Hash: chainhash.Hash{1}, Height: 100}
	c := coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: chainhash.Hash{7}, Vout: 3}, Height: 50, Value: 5, Script: []byte{0x51}}

	full := newStore(t, Options{})
	connectAll(t, full, []Block{{Hash: chainhash.Hash{2}, Height: 0, Txs: []*chain.Tx{coinbaseTx("g", 1, 50)}}})
	if _, err := full.LoadSnapshot(ctx, base); !errors.Is(err, ErrStoreNotEmpty) {
		t.Errorf("a store with a tip: %v", err)
	}
	withRecord := newStore(t, Options{})
	mustCreate(t, withRecord, coinbaseTx("x", 1, 5), 1)
	if _, err := withRecord.LoadSnapshot(ctx, base); !errors.Is(err, ErrStoreNotEmpty) {
		t.Errorf("a store with a record: %v", err)
	}

	var coinErr *SnapshotCoinError
	db := newStore(t, Options{})
	l, err := db.LoadSnapshot(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	above := c
	above.Height = 101
	if err := l.Add(ctx, []coinstats.Coin{above}); !errors.As(err, &coinErr) {
		t.Errorf("a coin above the snapshot's block: %v", err)
	}
	if err := l.Add(ctx, []coinstats.Coin{c, c}); !errors.As(err, &coinErr) {
		t.Errorf("an output twice: %v", err)
	}
	other := c
	other.TxID[0] = 8
	if err := l.Add(ctx, []coinstats.Coin{c, other}); !errors.As(err, &coinErr) {
		t.Errorf("another transaction's coin: %v", err)
	}
	l.Add(ctx, []coinstats.Coin{c})
	l.Add(ctx, []coinstats.Coin{c})
	if err := l.Finish(ctx); !errors.Is(err, model.ErrTxExists) {
		t.Errorf("a transaction given twice: %v", err)
	}
}

// TestSnapshotCoinsAStoreCannotHoldAreRefused: a coin at an output index
// above record.MaxWrapperIndex, which the store could not read back, is
// refused before the loader allocates by it, as is a transaction whose
// first coin's vout is above a later one's. The loader used to size its
// hashes by the last coin's vout before checking any: 32 GiB for vout
// 2^32-1, a store that reported its own record damaged for vout 2^26, and
// an index out of range for coins out of order.
func TestSnapshotCoinsAStoreCannotHoldAreRefused(t *testing.T) {
	base := SnapshotBase{Hash: chainhash.Hash{1}, Height: 100}
	coin := func(vout uint32) coinstats.Coin {
		return coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: chainhash.Hash{7}, Vout: vout}, Height: 50, Value: 5, Script: []byte{0x51}}
	}
	db := newStore(t, Options{})
	l, err := db.LoadSnapshot(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		coins []coinstats.Coin
		vout  uint32
	}{
		{"vout 2^32-1", []coinstats.Coin{coin(0), coin(^uint32(0))}, ^uint32(0)},
		{"vout 2^26", []coinstats.Coin{coin(record.MaxWrapperIndex + 1)}, record.MaxWrapperIndex + 1},
		{"vout 5 before vout 3", []coinstats.Coin{coin(5), coin(3)}, 3},
	} {
		var coinErr *SnapshotCoinError
		if err := l.Add(ctx, tc.coins); !errors.As(err, &coinErr) || coinErr.Outpoint.Vout != tc.vout {
			t.Errorf("%s: %v, want a SnapshotCoinError naming output %d", tc.name, err, tc.vout)
		}
	}
	if l.Records() != 0 {
		t.Errorf("%d records added", l.Records())
	}
}
