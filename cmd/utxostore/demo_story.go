package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// connectDemoChain carries the synthetic chain along the block path. A
// chain of three blocks or more survives a reorganisation on the way:
// the block before its tip first comes as a stale twin (demoChain.staleTwin),
// which the chain's last two blocks then replace.
func connectDemoChain(ctx context.Context, path *blockpath.Path, gen *demoChain) (reorged bool, err error) {
	blocks := gen.blocks
	last := len(blocks)
	if len(blocks) >= 3 {
		last = len(blocks) - 2
	}
	for height, b := range blocks[:last] {
		if err := path.Connect(ctx, b, uint32(height)); err != nil {
			return false, fmt.Errorf("connecting synthetic block %d: %w", height, err)
		}
	}
	if last == len(blocks) {
		return false, nil
	}
	stale := gen.staleTwin(blocks[last], uint32(last))
	if err := path.Connect(ctx, stale, uint32(last)); err != nil {
		return false, fmt.Errorf("connecting the stale synthetic block %d: %w", last, err)
	}
	if err := path.Reorg(ctx, []*chain.Block{stale}, blocks[last:]); err != nil {
		return false, fmt.Errorf("reorganising from the stale synthetic block %d: %w", last, err)
	}
	return true, nil
}

// demoStory is what the demo does to its chain's outputs after connecting
// it, so that each state of an output and a record in the store's model
// has an example to look at.
type demoStory struct {
	// Frozen is an output the alert system froze; Reassigned one it froze
	// and then gave to another script, spendable after a delay.
	Frozen, Reassigned wire.OutPoint
	// Unmined spends an output in no block; Conflicting spends the same
	// output and is stored as conflicting.
	Unmined, Conflicting chainhash.Hash
}

// tellDemoStory freezes an output, reassigns another, stores an unmined
// transaction and one in conflict with it, as the alert system and a
// validator do, through the store's API. It needs three unspent outputs
// that are no coinbase: ok is false on a chain too short to have them.
func tellDemoStory(ctx context.Context, db *utxo.DB, gen *demoChain) (story demoStory, ok bool, err error) {
	var coins []demoCoin
	for i := len(gen.pool) - 1; i >= 0 && len(coins) < 3; i-- {
		if !gen.pool[i].coinbase {
			coins = append(coins, gen.pool[i])
		}
	}
	if len(coins) < 3 {
		return demoStory{}, false, nil
	}
	frozen, reassigned, spent := coins[0], coins[1], coins[2]
	story.Frozen, story.Reassigned = frozen.out, reassigned.out
	freeze := []*utxo.Spend{{TxID: frozen.out.Hash, Vout: frozen.out.Index}, {TxID: reassigned.out.Hash, Vout: reassigned.out.Index}}
	if err := db.FreezeUTXOs(ctx, freeze); err != nil {
		return demoStory{}, false, fmt.Errorf("freezing the demo's outputs: %w", err)
	}
	newHash := chainhash.Hash(chain.UTXOHash(reassigned.out.Hash, reassigned.out.Index, demoScript(0xa11e47), uint64(reassigned.value)))
	if err := db.ReAssignUTXO(ctx, &utxo.Spend{TxID: reassigned.out.Hash, Vout: reassigned.out.Index}, &utxo.Spend{UTXOHash: &newHash}); err != nil {
		return demoStory{}, false, fmt.Errorf("reassigning the demo's output: %w", err)
	}

	height := db.GetBlockHeight() + 1
	spender := func(tag uint32) *chain.Tx {
		tx := wire.NewMsgTx(1)
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: spent.out, SignatureScript: []byte{0x51}, Sequence: wire.MaxTxInSequenceNum})
		tx.AddTxOut(wire.NewTxOut(spent.value-1000, demoScript(tag)))
		return chain.NewTx(tx)
	}
	unmined, conflicting := spender(0x0e1), spender(0x0e2)
	story.Unmined, story.Conflicting = unmined.ID, conflicting.ID
	// As a validator stores a transaction: its inputs spent, then it.
	spends, err := db.Spend(ctx, unmined, utxo.WithBlockHeight(height))
	if err != nil {
		return demoStory{}, false, fmt.Errorf("spending for the demo's unmined transaction: %w", err)
	}
	if _, err := db.Create(ctx, unmined, height, utxo.WithFee(1000)); err != nil {
		return demoStory{}, false, errors.Join(fmt.Errorf("storing the demo's unmined transaction: %w", err), db.Unspend(ctx, spends, false))
	}
	// A double spend of the same output is kept as conflicting: it spends
	// nothing, and its parent lists it among its conflicting children.
	if _, err := db.Create(ctx, conflicting, height, utxo.WithConflicting(), utxo.WithFee(1000)); err != nil {
		return demoStory{}, false, fmt.Errorf("storing the demo's conflicting transaction: %w", err)
	}
	return story, true, nil
}
