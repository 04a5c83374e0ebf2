package main

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/wire"
	bchcfg "github.com/gcash/bchd/chaincfg"
	"github.com/gcash/bchutil"

	"github.com/utxostore/utxostore/internal/btcdtest"
)

// largeTxOutputs makes a transaction of about 97 kB, under bchd's
// 100,000-byte standard size.
const largeTxOutputs = 2_850

// mineLargeBlock sends the node transactions of one coin into
// largeTxOutputs outputs until they hold over size bytes, and mines them
// into one block, which it checks is larger than size.
func mineLargeBlock(t *testing.T, node *btcdtest.Node, w *btcdtest.Wallet, size int) *wire.MsgBlock {
	t.Helper()
	_, tip := node.Tip(t)
	for total := 0; total <= size; {
		coins := w.Take(tip, 1)
		if len(coins) == 0 {
			t.Fatal("the wallet ran out of coins")
		}
		tx := w.Pay(t, coins, largeTxOutputs, 200_000)
		send(t, node, tx)
		total += tx.SerializeSize()
	}
	b := mineOne(t, node, w)
	if got := b.SerializeSize(); got <= size {
		t.Fatalf("the node mined a block of %d bytes, want over %d", got, size)
	}
	return b
}

// TestSyncFollowsBchd follows a real bchd on bch-regtest from genesis
// through two blocks over 4 MB (mined by the node from transactions sent
// to its mempool, signed as Bitcoin Cash signs), killing sync -9 twice
// during catch-up; each restart resumes from the store's tip and the end
// is the UTXO digest and address index of a fresh import of the node's
// blocks. Then, followed in the test's process, the node's unconfirmed
// transactions are stored unmined, and a second bchd's longer branch,
// once the nodes connect, reorganises the store: the transaction the lost
// branch mined goes back to unmined, the one the winning branch
// double-spends becomes conflicting, and the store is the winning chain's.
func TestSyncFollowsBchd(t *testing.T) {
	w := btcdtest.Bchd.NewWallet(t, "bchd sync")
	node := btcdtest.Bchd.Start(t, w)
	node.Generate(t, 1)
	for range 200 {
		mineOne(t, node, w)
	}
	mineWithTxs(t, node, w, 10)
	mineLargeBlock(t, node, w, 4_200_000)
	mineWithTxs(t, node, w, 5)
	mineLargeBlock(t, node, w, 4_200_000)
	mineWithTxs(t, node, w, 5)

	data, blockDir := t.TempDir(), t.TempDir()
	syncArgs := []string{"sync", "--index", "--network", btcdtest.Bchd.Network, "--data", data, "--peer", node.P2P}
	killMidSync(t, append(syncArgs, "--progress-blocks", "5")...)
	killAfterProgress(t, "synced height", 20, append(syncArgs, "--progress-blocks", "5")...)
	synced := parseSummary(t, lastLine(t, append(syncArgs, "--quiet", "--stop-at-tip")...))
	hash, height := node.Tip(t)
	want := importedSummary(t, node, blockDir)
	if synced != want || want.Height != uint32(height) {
		t.Fatalf("after sync to the node's tip %s at height %d:\n got %+v\nwant %+v (import of the node's blocks)", hash, height, synced, want)
	}
	if got, want := indexBalance(t, data, w.PkScript), importedBalance(t, node, blockDir, w.PkScript); !reflect.DeepEqual(got, want) {
		t.Fatal(describeBalances(got, want))
	}
	noStagedBlocks(t, data)
	checkCashAddr(t, data, w.PkScript)
	// The block store's segments are the network's block files: import
	// takes them.
	segments, err := filepath.Glob(filepath.Join(data, "blocks", "blk*.dat"))
	if err != nil || len(segments) < 3 {
		t.Fatalf("the block store's segments: %v %v (each large block starts one)", segments, err)
	}
	imported := parseSummary(t, lastLine(t, append([]string{"import", "--quiet", "--network", btcdtest.Bchd.Network, "--sync", "block", "--data", t.TempDir()}, segments...)...))
	if imported != synced {
		t.Fatalf("import of the block store's segments:\n got %+v\nwant %+v", imported, synced)
	}

	other := btcdtest.Bchd.Start(t, w)
	other.Connect(t, node)
	waitSameTip(t, node, other)
	other.Disconnect(t, node)
	f := followInProcess(t, node)
	f.waitTip(t, node)
	_, tip := node.Tip(t)
	coins := w.Take(tip, 2)
	if len(coins) < 2 {
		t.Fatal("the wallet ran out of coins")
	}
	minedOnLoser := w.Pay(t, coins[:1], 2, 10_000)
	send(t, node, minedOnLoser)
	f.waitState(t, minedOnLoser, "unmined")
	node.Generate(t, 1)
	f.waitTip(t, node)
	f.waitState(t, minedOnLoser, "mined")
	doubleSpent := w.Pay(t, coins[1:], 1, 10_000)
	send(t, node, doubleSpent)
	f.waitState(t, doubleSpent, "unmined")
	winner := w.Pay(t, coins[1:], 2, 20_000)
	send(t, other, winner)
	other.Generate(t, 3)
	other.Connect(t, node)
	waitSameTip(t, node, other)
	f.waitTip(t, node)
	for tx, want := range map[*wire.MsgTx]string{minedOnLoser: "unmined", doubleSpent: "conflicting", winner: "mined"} {
		if got := f.txState(tx.TxHash()); got != want {
			t.Errorf("transaction %s is %s, want %s", tx.TxHash(), got, want)
		}
	}
	btcdtest.WaitFor(t, 60*time.Second, "the reorganisation's metrics", func() (bool, string) {
		got := f.gauge(t, "utxostore_follow_last_reorg_depth")
		return got == 1, fmt.Sprintf("the last reorganisation's depth is %v, want 1", got)
	})
	node.Generate(t, 1) // mines minedOnLoser again, from the node's mempool
	waitSameTip(t, node, other)
	f.waitTip(t, node)
	f.waitState(t, minedOnLoser, "mined")
	got, err := f.store.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := importedSummary(t, node, blockDir); got != want {
		t.Fatalf("the store after the reorganisation:\n got %+v\nwant %+v (import of the winning chain)", got, want)
	}
	f.checkIndex(t, node, blockDir, w.PkScript)
}

// checkCashAddr serves the Bitcoin Cash store in data and looks the
// pay-to-pubkey-hash script up by its cashaddr, the form Blockbook shows
// for Bitcoin Cash, and by its legacy address: both give the index's
// balance; its transactions show the cashaddr.
func checkCashAddr(t *testing.T, data string, script []byte) {
	t.Helper()
	if len(script) != 25 || script[0] != 0x76 {
		t.Fatalf("the wallet's script %x is not pay-to-pubkey-hash", script)
	}
	hash := script[3:23]
	cash, err := bchutil.NewAddressPubKeyHash(hash, &bchcfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := btcutil.NewAddressPubKeyHash(hash, &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	want := indexBalance(t, data, script)
	d := startDaemon(t, "serve", "--index", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	cashaddr := bchcfg.RegressionNetParams.CashAddressPrefix + ":" + cash.EncodeAddress()
	for _, addr := range []string{cashaddr, legacy.EncodeAddress()} {
		var got struct {
			Address string `json:"address"`
			Balance string `json:"balance"`
		}
		getJSON(t, "http://"+d.http+"/api/v2/address/"+addr, &got)
		if got.Address != addr || got.Balance != fmt.Sprint(want.Balance) {
			t.Errorf("/api/v2/address/%s: %+v, want the address as asked (as Blockbook echoes it) and the index's balance %d", addr, got, want.Balance)
		}
	}
	var page struct {
		Transactions []struct {
			Vout []struct {
				Addresses []string `json:"addresses"`
			} `json:"vout"`
		} `json:"transactions"`
	}
	getJSON(t, "http://"+d.http+"/api/v2/address/"+cashaddr+"?details=txs&pageSize=1", &page)
	if len(page.Transactions) == 0 || len(page.Transactions[0].Vout) == 0 || !slices.ContainsFunc(page.Transactions[0].Vout, func(v struct {
		Addresses []string `json:"addresses"`
	}) bool {
		return slices.Contains(v.Addresses, cashaddr)
	}) {
		t.Errorf("the address's transactions do not show its cashaddr %s: %+v", cashaddr, page)
	}
	var status struct {
		Blockbook struct {
			Coin string `json:"coin"`
		} `json:"blockbook"`
	}
	getJSON(t, "http://"+d.http+"/api/status", &status)
	if status.Blockbook.Coin == "" || status.Blockbook.Coin == "Bitcoin" {
		t.Errorf("a Bitcoin Cash store's status names coin %q", status.Blockbook.Coin)
	}
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, d.log())
	}
}
