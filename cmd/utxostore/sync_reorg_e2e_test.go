package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/follow"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/btcdtest"
	"github.com/utxostore/utxostore/internal/testlog"
	"github.com/utxostore/utxostore/utxo"
)

// follower is a follower run in the test's process over a Pebble store, so
// the test can read the store while it follows.
type follower struct {
	store   *utxo.DB
	index   *index.Index
	metrics *prometheus.Registry
}

func followInProcess(t *testing.T, node *btcdtest.Node) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sf := storeFlags{engine: "pebble", data: t.TempDir(), sync: "always", network: node.Kind.Network, index: true}
	st, err := sf.openStores(ctx, createStore, pathSettings{followWindow: follow.DefaultRollbackWindow})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics := follow.NewMetrics()
	reg.MustRegister(metrics)
	ff := followFlags{peer: node.P2P, rollbackWindow: follow.DefaultRollbackWindow, inFlight: follow.DefaultInFlight}
	fol, err := ff.follower(&sf, follow.Config{Path: st.path, Metrics: metrics, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fol.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the follower stopped: %v", err)
		}
		if err := st.close(); err != nil {
			t.Error(err)
		}
	})
	return &follower{store: st.store, index: st.index, metrics: reg}
}

// waitTip waits until the store's tip is the node's.
func (f *follower) waitTip(t *testing.T, node *btcdtest.Node) {
	t.Helper()
	want, height := node.Tip(t)
	btcdtest.WaitFor(t, 60*time.Second, fmt.Sprintf("the store to reach block %s at height %d", want, height), func() (bool, string) {
		tip, ok, _ := f.store.Tip(context.Background())
		return ok && tip.Hash == want, fmt.Sprintf("the store's tip is %s at height %d", tip.Hash, tip.Height)
	})
}

// txState is a transaction's lifecycle state in the store.
func (f *follower) txState(txid chainhash.Hash) string {
	m, err := f.store.Get(context.Background(), txid)
	switch {
	case err != nil:
		return err.Error()
	case m.Conflicting:
		return "conflicting"
	case m.UnminedSince != 0 && len(m.BlockIDs) == 0:
		return "unmined"
	case m.UnminedSince == 0 && len(m.BlockIDs) > 0:
		return "mined"
	default:
		return fmt.Sprintf("unminedSince %d, blocks %v", m.UnminedSince, m.BlockIDs)
	}
}

func (f *follower) waitState(t *testing.T, tx *wire.MsgTx, want string) {
	t.Helper()
	txid := tx.TxHash()
	btcdtest.WaitFor(t, 60*time.Second, fmt.Sprintf("transaction %s to be %s", txid, want), func() (bool, string) {
		got := f.txState(txid)
		return got == want, got
	})
}

// gauge reads a metric of the follower.
func (f *follower) gauge(t *testing.T, name string) float64 {
	t.Helper()
	families, err := f.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() == name {
			m := fam.GetMetric()[0]
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func send(t *testing.T, node *btcdtest.Node, tx *wire.MsgTx) {
	t.Helper()
	node.Send(t, tx)
}

// TestSyncReorgsAndMempool follows node A while B mines a longer branch
// of depth 1, 3 and 10 apart from it; connecting the two makes A reorganise
// to B's branch. The store follows in one Reorg: the transaction A's branch
// mined goes back to unmined (then mined again when A mines it from its
// mempool), the unmined transaction B's branch double-spends becomes
// conflicting, and the digest equals a fresh import of the winning chain.
func TestSyncReorgsAndMempool(t *testing.T) {
	w := btcdtest.NewWallet(t, "reorg")
	a := btcdtest.Start(t, w.Addr)
	b := btcdtest.Start(t, w.Addr)
	matureCoins(t, a, w)
	mineWithTxs(t, a, w, 10)
	f := followInProcess(t, a)
	f.waitTip(t, a)
	blockDir := t.TempDir()

	for _, depth := range []int{1, 3, 10} {
		t.Logf("a reorganisation of depth %d", depth)
		b.Connect(t, a)
		waitSameTip(t, a, b)
		b.Disconnect(t, a)
		_, tip := a.Tip(t)
		coins := w.Take(tip, 2)
		if len(coins) < 2 {
			t.Fatal("the wallet ran out of coins")
		}

		minedOnLoser := w.Pay(t, coins[:1], 2, 10_000)
		send(t, a, minedOnLoser)
		f.waitState(t, minedOnLoser, "unmined")
		a.Generate(t, depth)
		f.waitTip(t, a)
		if got := f.txState(minedOnLoser.TxHash()); got != "mined" {
			t.Fatalf("a transaction A mined is %s", got)
		}

		doubleSpent := w.Pay(t, coins[1:], 1, 10_000)
		send(t, a, doubleSpent)
		f.waitState(t, doubleSpent, "unmined")
		winner := w.Pay(t, coins[1:], 2, 20_000)
		send(t, b, winner)
		b.Generate(t, depth+1)

		b.Connect(t, a)
		waitSameTip(t, a, b)
		f.waitTip(t, a)
		for tx, want := range map[*wire.MsgTx]string{minedOnLoser: "unmined", doubleSpent: "conflicting", winner: "mined"} {
			if got := f.txState(tx.TxHash()); got != want {
				t.Errorf("depth %d: transaction %s is %s, want %s", depth, tx.TxHash(), got, want)
			}
		}
		btcdtest.WaitFor(t, 60*time.Second, "the reorganisation's metrics", func() (bool, string) {
			got := f.gauge(t, "utxostore_follow_last_reorg_depth")
			return got == float64(depth), fmt.Sprintf("the last reorganisation's depth is %v, want %d", got, depth)
		})

		a.Generate(t, 1) // mines minedOnLoser again, from A's mempool
		waitSameTip(t, a, b)
		f.waitTip(t, a)
		f.waitState(t, minedOnLoser, "mined")
		got, err := f.store.Summary(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := importedSummary(t, a, blockDir); got != want {
			t.Fatalf("depth %d: the store after the reorganisation:\n got %+v\nwant %+v (import of the winning chain)", depth, got, want)
		}
		f.checkIndex(t, a, blockDir, w.PkScript)
	}
	if got := f.gauge(t, "utxostore_follow_reorgs_total"); got != 3 {
		t.Errorf("%v reorganisations counted, want 3", got)
	}
}

// waitSameTip waits until both nodes have the same best block.
func waitSameTip(t *testing.T, a, b *btcdtest.Node) {
	t.Helper()
	btcdtest.WaitFor(t, 60*time.Second, "the nodes to agree on their tip", func() (bool, string) {
		ha, na := a.Tip(t)
		hb, nb := b.Tip(t)
		return ha == hb, fmt.Sprintf("A at %d (%s), B at %d (%s)", na, ha, nb, hb)
	})
}

// counter reads a counter of the follower by its one label's value.
func (f *follower) counter(t *testing.T, name, label string) float64 {
	t.Helper()
	families, err := f.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestSyncMempoolDoubleSpend has the node announce a double spend of an
// unmined transaction the store holds, after a restart cost the node its
// mempool (the follower reconnects, and asks for the mempool again): the
// store refuses it with SPENT, counted in the metrics, and keeps the first
// one unmined; the block that mines the double spend makes the first
// conflicting, and the digest equals a fresh import.
func TestSyncMempoolDoubleSpend(t *testing.T) {
	w, node := minedNode(t, "double spend", 0)
	f := followInProcess(t, node)
	f.waitTip(t, node)
	_, tip := node.Tip(t)
	coins := w.Take(tip, 1)
	first := w.Pay(t, coins, 1, 10_000)
	send(t, node, first)
	f.waitState(t, first, "unmined")
	// The follower counts a transaction once it has stored it: the count
	// may come a moment after the store shows it.
	btcdtest.WaitFor(t, 30*time.Second, "the unmined transaction to be counted", func() (bool, string) {
		got := f.gauge(t, "utxostore_follow_unmined_txs")
		return got == 1, fmt.Sprintf("%v unmined transactions counted, want 1", got)
	})

	node.Restart(t)
	second := w.Pay(t, coins, 2, 20_000)
	send(t, node, second)
	btcdtest.WaitFor(t, 60*time.Second, "the double spend to be refused", func() (bool, string) {
		n := f.counter(t, "utxostore_follow_mempool_txs_total", "SPENT")
		return n == 1, fmt.Sprintf("%v refused as SPENT", n)
	})
	if got := f.txState(second.TxHash()); !strings.Contains(got, "TX_NOT_FOUND") {
		t.Errorf("the refused double spend is in the store: %s", got)
	}
	if got := f.txState(first.TxHash()); got != "unmined" {
		t.Errorf("the first spend is %s after the double spend was refused", got)
	}

	node.Generate(t, 1)
	f.waitTip(t, node)
	f.waitState(t, second, "mined")
	f.waitState(t, first, "conflicting")
	got, err := f.store.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := importedSummary(t, node, t.TempDir()); got != want {
		t.Fatalf("the store:\n got %+v\nwant %+v (import of the node's chain)", got, want)
	}
}

// checkIndex compares the follower's address index, for the output script,
// with an index built by import --index of the node's chain.
func (f *follower) checkIndex(t *testing.T, node *btcdtest.Node, blockDir string, script []byte) {
	t.Helper()
	want := importedBalance(t, node, blockDir, script)
	// The index follows the store's block a moment later.
	btcdtest.WaitFor(t, 60*time.Second, "the followed address index to match import --index", func() (bool, string) {
		got, err := f.index.Balance(script)
		if err != nil {
			t.Fatal(err)
		}
		return reflect.DeepEqual(got, want), describeBalances(got, want)
	})
}

func describeBalances(got, want index.Balance) string {
	return fmt.Sprintf("the followed index has %d txs, %d sent, balance %d, %d UTXOs; import --index has %d, %d, %d, %d",
		got.Txs, got.Sent, got.Balance, len(got.UTXOs), want.Txs, want.Sent, want.Balance, len(want.UTXOs))
}

// importedBalance is the script's balance in the address index that
// import --index builds from the node's chain.
func importedBalance(t *testing.T, node *btcdtest.Node, blockDir string, script []byte) index.Balance {
	t.Helper()
	dir := t.TempDir()
	lastLine(t, append([]string{"import", "--quiet", "--index", "--network", node.Kind.Network, "--sync", "block", "--data", dir}, node.WriteChain(t, blockDir)...)...)
	return indexBalance(t, dir, script)
}

// indexBalance reads the script's balance from the address index of the
// store in dir (no process holds it).
func indexBalance(t *testing.T, dir string, script []byte) index.Balance {
	t.Helper()
	d, err := readDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	network, err := chain.LookupNetwork(d.network)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := index.Open(filepath.Join(dir, "index"), index.Options{Coin: network.Coin})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	b, err := idx.Balance(script)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSyncUnminedRetention: transactions the node forgot (a restart: btcd
// keeps no mempool on disk) and never mines stay unmined for
// --unmined-retention blocks, then the cleanup at the block after removes
// them and frees their inputs. serve --peer with a retention of 3 keeps the
// transaction that arrived 2 blocks ago and removes the one that arrived 4
// blocks ago; sync with a retention of 1 then removes the younger one at
// the next block, and the UTXO set is again the node's.
func TestSyncUnminedRetention(t *testing.T) {
	w, node := minedNode(t, "retention", 0)
	data := t.TempDir()
	d := startDaemon(t, "serve", "--create", "--network", "simnet", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--peer", node.P2P, "--ready-max-behind", "0", "--unmined-retention", "3")
	txURL := func(tx *wire.MsgTx) string { return "http://" + d.http + "/api/v2/tx/" + tx.TxHash().String() }
	// forgotten has the daemon store a transaction as unmined, then
	// restarts the node, which forgets it.
	forgotten := func() *wire.MsgTx {
		waitServedTip(t, d, node)
		_, tip := node.Tip(t)
		tx := w.Pay(t, w.Take(tip, 1), 1, 10_000)
		send(t, node, tx)
		btcdtest.WaitFor(t, 60*time.Second, "the daemon to hold the transaction unmined", func() (bool, string) {
			code, body := httpGet(t, txURL(tx))
			return code == http.StatusOK && strings.Contains(body, `"blockHeight": -1`), body
		})
		node.Restart(t)
		return tx
	}
	old := forgotten()
	node.Generate(t, 2)
	young := forgotten()
	node.Generate(t, 2)
	waitServedTip(t, d, node)
	// The cleanup runs once the block's tip is written, so it is waited for.
	btcdtest.WaitFor(t, 60*time.Second, "the cleanup of the transaction 4 blocks old", func() (bool, string) {
		code, body := httpGet(t, txURL(old))
		return code == http.StatusBadRequest, body
	})
	if code, body := httpGet(t, txURL(young)); code != http.StatusOK || !strings.Contains(body, `"blockHeight": -1`) {
		t.Errorf("the transaction 2 blocks old, within the retention of 3, answers %d %s", code, body)
	}
	btcdtest.WaitFor(t, 60*time.Second, "the unmined count after the cleanup", func() (bool, string) {
		_, metrics := httpGet(t, "http://"+d.http+"/metrics")
		return strings.Contains(metrics, "\nutxostore_follow_unmined_txs 1\n"), metrics
	})
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("the daemon did not stop cleanly: %v\n%s", err, d.log())
	}

	node.Generate(t, 1)
	got := parseSummary(t, lastLine(t, "sync", "--quiet", "--stop-at-tip", "--unmined-retention", "1", "--network", "simnet", "--data", data, "--peer", node.P2P))
	if want := importedSummary(t, node, t.TempDir()); got != want {
		t.Fatalf("after sync --unmined-retention 1 one block later:\n got %+v\nwant %+v (import of the node's chain)", got, want)
	}
}
