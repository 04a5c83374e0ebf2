package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/utxostore/utxostore/internal/btcdtest"
)

// TestElectrumReorgNotifies follows btcd node A while B mines a longer
// branch: when A reorganises to it, an Electrum subscriber hears of B's
// tip and of the changed status of the script every block pays, and the
// history it then reads is B's chain, whose hash is that status.
func TestElectrumReorgNotifies(t *testing.T) {
	w := btcdtest.NewWallet(t, "electrum-reorg")
	a := btcdtest.Start(t, w.Addr)
	b := btcdtest.Start(t, w.Addr)
	a.Generate(t, 5)
	b.Connect(t, a)
	waitSameTip(t, a, b)
	b.Disconnect(t, a)
	a.Generate(t, 1)
	d := startDaemon(t, "serve", "--create", "--index", "--network", "simnet", "--data", t.TempDir(),
		"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--electrum", "127.0.0.1:0", "--peer", a.P2P, "--ready-max-behind", "0")
	waitServedTip(t, d, a)

	c := dialElectrum(t, electrumAddrOf(t, d))
	sh := scriptHash(w.PkScript)
	var tip struct {
		Hex    string `json:"hex"`
		Height int32  `json:"height"`
	}
	c.result(&tip, "blockchain.headers.subscribe")
	var before string
	c.result(&before, "blockchain.scripthash.subscribe", sh)

	bTip := b.Generate(t, 2)[1]
	b.Connect(t, a)
	waitSameTip(t, a, b)
	var newTip, newStatus bool
	for !newTip || !newStatus {
		n, err := c.read()
		if err != nil {
			t.Fatalf("waiting for the notifications of the reorganisation (tip %v, status %v): %v", newTip, newStatus, err)
		}
		var params []json.RawMessage
		if err := json.Unmarshal(n.Params, &params); err != nil || len(params) == 0 {
			continue
		}
		switch n.Method {
		case "blockchain.headers.subscribe":
			if err := json.Unmarshal(params[0], &tip); err != nil {
				t.Fatal(err)
			}
			raw, _ := hex.DecodeString(tip.Hex)
			newTip = tip.Height == 7 && blockHashOfHeader(raw) == bTip.String()
		case "blockchain.scripthash.subscribe":
			var status string
			if len(params) == 2 && json.Unmarshal(params[1], &status) == nil && status != before {
				newStatus = statusOfHistory(t, c, sh) == status
			}
		}
	}
	var history []histItem
	c.result(&history, "blockchain.scripthash.get_history", sh)
	for h := int32(1); h <= 7; h++ {
		hash, err := b.RPC.GetBlockHash(int64(h))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := b.Block(t, hash)
		if history[h-1] != (histItem{TxHash: blk.Transactions[0].TxHash().String(), Height: int64(h)}) {
			t.Fatalf("history entry %d is %+v, not B's coinbase at that height", h-1, history[h-1])
		}
	}
}

// statusOfHistory is the status of the script hash's history as the
// server now gives it.
func statusOfHistory(t *testing.T, c *electrumClient, sh string) string {
	t.Helper()
	var history []histItem
	c.result(&history, "blockchain.scripthash.get_history", sh)
	h := sha256.New()
	for _, e := range history {
		fmt.Fprintf(h, "%s:%d:", e.TxHash, e.Height)
	}
	return hex.EncodeToString(h.Sum(nil))
}
