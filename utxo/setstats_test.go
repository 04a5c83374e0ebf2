package utxo

import (
	"fmt"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
)

// walkedStats are the set's statistics by a walk of it.
func walkedStats(t *testing.T, db *DB) coinstats.Summary {
	t.Helper()
	var s coinstats.Stats
	if err := db.ForEachCoin(ctx, func(c *coinstats.Coin) error {
		s.Add(c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s.Finalize()
}

// TestSetStatsFollowTheChain connects real blocks (with spends) one by one
// and disconnects the last 250 again (within the retention, past which a
// spent transaction's record is pruned and a disconnection cannot bring it
// back): after every block the statistics the chain state keeps are those
// of a walk of the set, and back at an earlier block they are what they
// were there.
func TestSetStatsFollowTheChain(t *testing.T) {
	blocks := chainBlocks(t, btcChain)[:3000]
	db := newStore(t, Options{})
	seen := map[uint32]coinstats.Summary{}
	for h, b := range blocks {
		if err := db.ConnectBlock(ctx, b); err != nil {
			t.Fatal(err)
		}
		if h%50 == 0 || len(b.Txs) > 1 {
			kept, err := db.SetStats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if walked := walkedStats(t, db); kept != walked {
				t.Fatalf("after block %d: kept %+v, walked %+v", h, kept, walked)
			}
			seen[uint32(h)] = kept
		}
	}
	if s := seen[0]; s.TxOuts != 0 || s.TotalAmount != 0 {
		t.Fatalf("after the genesis block: %+v, want the empty set (Core holds no genesis output)", s)
	}
	spends := 0
	for h := len(blocks) - 1; h >= len(blocks)-250; h-- {
		if err := db.DisconnectBlock(ctx, blocks[h]); err != nil {
			t.Fatal(err)
		}
		if len(blocks[h].Txs) > 1 {
			spends++
		}
		want, ok := seen[uint32(h-1)]
		if !ok {
			continue
		}
		if got, err := db.SetStats(ctx); err != nil || got != want {
			t.Fatalf("back at block %d: %+v (%v), want %+v", h-1, got, err, want)
		}
	}
	if spends == 0 {
		t.Fatal("no block with spends was disconnected")
	}
	mustVerify(t, db)
}

// TestVerifyChecksTheSetStats: statistics in the chain state that are not
// the set's are an inconsistency Verify reports.
func TestVerifyChecksTheSetStats(t *testing.T) {
	db := newStore(t, Options{})
	connectAll(t, db, chainBlocks(t, btcChain)[:20])
	mustVerify(t, db)
	cs, err := db.loadChainState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The statistics of the set the chain state holds, whatever part of
	// the blocks that is, with a coin more.
	wrong, err := cs.setStats()
	if err != nil {
		t.Fatal(err)
	}
	wrong.Add(&coinstats.Coin{Height: 1, Value: 1, Script: []byte{0x51}})
	if cs.Stats, err = wrong.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	if err := db.saveChainState(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Verify(ctx); err == nil || !strings.Contains(err.Error(), "set's statistics") {
		t.Fatalf("Verify over wrong statistics: %v", err)
	}
}

// TestSetStatsIgnoreMempoolSpends: an output an unmined transaction spends
// is still in the chain's set (Bitcoin Core's holds no mempool spend): the
// walk that verify makes counts it, as the statistics the blocks kept do.
func TestSetStatsIgnoreMempoolSpends(t *testing.T) {
	blocks := chainBlocks(t, btcChain)[:110]
	db := newStore(t, Options{})
	connectAll(t, db, blocks)
	before, err := db.SetStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	coinbase := blocks[1].Txs[0]
	spender := spendTx("mempool spender", []wire.OutPoint{{Hash: coinbase.ID}}, 1, 1e8)
	if _, err := db.Spend(ctx, spender); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, spender, 110)
	if kept, err := db.SetStats(ctx); err != nil || kept != before {
		t.Fatalf("an unmined spend changed the kept statistics: %+v (%v), was %+v", kept, err, before)
	}
	if walked := walkedStats(t, db); walked != before {
		t.Fatalf("the walk with an unmined spend: %+v, want the chain's set %+v", walked, before)
	}
	mustVerify(t, db)
}

// TestARepeatedCoinbaseIsInTheSetOnce: mainnet's block 91842 repeats block
// 91812's coinbase, which overwrote its unspent output (BIP30's exemption).
// Bitcoin Core's set holds that output once, at 91842, as the store's walk
// does (the record mined at both heights). The statistics used to add it
// at both blocks: verify failed on every store past 91842, and snapshot
// dump and backup, which ask verify, were refused. Disconnecting 91842
// brings the earlier output back.
func TestARepeatedCoinbaseIsInTheSetOnce(t *testing.T) {
	repeatHash, err := chainhash.NewHashFromStr("00000000000a4d0a398161ffc163c503763b1f4360639393e0e4c8e300e0caec")
	if err != nil {
		t.Fatal(err)
	}
	db := newStore(t, Options{})
	repeated := coinbaseTx("the coinbase 91842 repeats", 1, 50e8)
	var blocks []Block
	for h := uint32(91812); h <= 91842; h++ {
		b := Block{Hash: chainhash.DoubleHashH(fmt.Append(nil, "block ", h)), Height: h, Txs: []*chain.Tx{coinbaseTx(fmt.Sprint("c", h), 1, 50e8)}}
		if h == 91812 || h == 91842 {
			b.Txs[0] = repeated
		}
		if h == 91842 {
			b.Hash = *repeatHash
		}
		if len(blocks) > 0 {
			b.PrevHash = blocks[len(blocks)-1].Hash
		}
		connectAll(t, db, []Block{b})
		blocks = append(blocks, b)
		if h == 91841 {
			mustVerify(t, db)
		}
	}
	mustVerify(t, db)
	stats, err := db.SetStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(len(blocks) - 1); stats.TxOuts != want {
		t.Fatalf("%d outputs in the set's statistics, want %d: the repeated coinbase's once", stats.TxOuts, want)
	}
	if err := db.DisconnectBlock(ctx, blocks[len(blocks)-1]); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, db)
}
