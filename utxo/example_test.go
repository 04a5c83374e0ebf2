package utxo_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// Store a transaction, spend one of its outputs, and see a double spend
// refused with the spender named.
func Example() {
	ctx := context.Background()
	store, err := utxo.Open(ctx, memory.New(), utxo.Options{}) // or pebble.Open / sozu.Open(dir, ...)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	parent := wire.NewMsgTx(1)
	parent.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 0xffffffff}, SignatureScript: []byte("example")})
	parent.AddTxOut(&wire.TxOut{Value: 50_0000_0000, PkScript: []byte{0x51}})
	parentTx := chain.NewTx(parent)
	mined := model.MinedBlockInfo{BlockID: 1, BlockHeight: 1, OnLongestChain: true}
	if _, err := store.Create(ctx, parentTx, 1, utxo.WithMinedBlockInfo(mined)); err != nil {
		panic(err)
	}

	spend := func(tag string) error {
		child := wire.NewMsgTx(1)
		child.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: parentTx.ID, Index: 0}, SignatureScript: []byte(tag)})
		child.AddTxOut(&wire.TxOut{Value: 49_0000_0000, PkScript: []byte{0x51}})
		// Coinbase outputs mature 100 blocks after they are mined.
		_, err := store.Spend(ctx, chain.NewTx(child), utxo.WithBlockHeight(101))
		return err
	}
	fmt.Println("first spend:", spend("alice"))
	err = spend("bob")
	fmt.Println("double spend refused:", errors.Is(err, model.ErrSpent))

	meta, _ := store.Get(ctx, parentTx.ID)
	fmt.Println("output 0 spent:", meta.Outputs[0].SpendingData != nil)
	// Output:
	// first spend: <nil>
	// double spend refused: true
	// output 0 spent: true
}
