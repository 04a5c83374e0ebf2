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
	path := indexedPath(t)
	chainBlocks := server.MainnetChainBlocks(t, 3)
	for height, b := range chainBlocks {
		if err := path.Connect(ctx, b, uint32(height)); err != nil {
			t.Fatal(err)
		}
	}
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
