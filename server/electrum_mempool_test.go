package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/electrum"
	"github.com/utxostore/utxostore/server"
)

// TestElectrumBoundsAScriptsMempool: blockchain.scripthash.get_mempool
// of a script more unmined transactions pay than --electrum-max-history
// lets one history answer hold is refused with an error naming the flag,
// as get_history of the same transactions is. The daemon used to answer
// every one of them, however many the mempool held.
func TestElectrumBoundsAScriptsMempool(t *testing.T) {
	ctx := context.Background()
	path, chainBlocks := indexedPathAt(t, 3, 3)
	srv, _ := servePathForTest(t, path, server.Options{Network: "mainnet", ElectrumAddr: "127.0.0.1:0",
		Electrum: electrum.Limits{MaxHistory: 1}})

	// Two unmined transactions, spending blocks 1's and 2's coinbases,
	// pay one script.
	pay := []byte{0x51}
	for _, b := range chainBlocks[1:] {
		spend := wire.NewMsgTx(1)
		spend.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: b.Txs[0].ID}, []byte{0x51}, nil))
		spend.AddTxOut(wire.NewTxOut(49e8, pay))
		if _, err := path.Store().Create(ctx, chain.NewTx(spend), 3); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256(pay)
	slices.Reverse(sum[:])
	sh := hex.EncodeToString(sum[:])

	c, r := dialElectrum(t, srv, 30*time.Second)
	for _, method := range []string{"blockchain.scripthash.get_history", "blockchain.scripthash.get_mempool"} {
		if _, err := fmt.Fprintf(c, `{"jsonrpc":"2.0","id":1,"method":%q,"params":[%q]}`+"\n", method, sh); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, `"error"`) || !strings.Contains(line, "--electrum-max-history") {
			t.Errorf("%s of two unmined transactions, over a limit of 1: %s", method, line)
		}
	}
}

// TestElectrumGivesAChildOfAnUnminedParentHeightMinusOne: in a script's
// mempool history a transaction whose parent is mined has height 0 and
// one spending an unmined transaction's output -1, in each view of the
// mempool: once the parent's child is added, and again once the parent is
// gone from the mempool (deleted here) and the child's parent is no
// longer unmined.
func TestElectrumGivesAChildOfAnUnminedParentHeightMinusOne(t *testing.T) {
	ctx := context.Background()
	path, chainBlocks := indexedPathAt(t, 2, 2)
	srv, _ := servePathForTest(t, path, server.Options{Network: "mainnet", ElectrumAddr: "127.0.0.1:0"})
	pay := []byte{0x51}
	parent := wire.NewMsgTx(1)
	parent.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainBlocks[1].Txs[0].ID}, []byte{0x51}, nil))
	parent.AddTxOut(wire.NewTxOut(49e8, pay))
	child := wire.NewMsgTx(1)
	child.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: parent.TxHash()}, []byte{0x51}, nil))
	child.AddTxOut(wire.NewTxOut(48e8, pay))
	sum := sha256.Sum256(pay)
	slices.Reverse(sum[:])
	sh := hex.EncodeToString(sum[:])

	c, r := dialElectrum(t, srv, 30*time.Second)
	mempool := func() string {
		t.Helper()
		if _, err := fmt.Fprintf(c, `{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.get_mempool","params":[%q]}`+"\n", sh); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	entry := func(tx *wire.MsgTx, height int) string {
		return fmt.Sprintf(`{"tx_hash":"%s","height":%d`, tx.TxHash(), height)
	}
	if _, err := path.Store().Create(ctx, chain.NewTx(parent), 2); err != nil {
		t.Fatal(err)
	}
	if got := mempool(); !strings.Contains(got, entry(parent, 0)) {
		t.Fatalf("the parent alone: %s", got)
	}
	if _, err := path.Store().Create(ctx, chain.NewTx(child), 2); err != nil {
		t.Fatal(err)
	}
	if got := mempool(); !strings.Contains(got, entry(parent, 0)) || !strings.Contains(got, entry(child, -1)) {
		t.Fatalf("the parent and its child: %s", got)
	}
	if err := path.Store().Delete(ctx, parent.TxHash()); err != nil {
		t.Fatal(err)
	}
	if got := mempool(); strings.Contains(got, parent.TxHash().String()) || !strings.Contains(got, entry(child, 0)) {
		t.Fatalf("the child once its parent is gone: %s", got)
	}
}
