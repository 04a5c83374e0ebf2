package utxo

import (
	"strings"
	"testing"

	"github.com/btcsuite/btcd/wire"

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
