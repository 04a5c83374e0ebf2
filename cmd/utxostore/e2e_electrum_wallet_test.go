package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"

	"github.com/utxostore/utxostore/internal/btcdtest"
)

// walletSeed is an Electrum seed (segwit type) the test wallet restores
// from; made with `electrum make_seed --seed_type segwit`.
const walletSeed = "lumber team bacon truth custom tree predict that catalog nation myself tooth"

// electrumWallet runs Debian's electrum (4.3.4) as a headless daemon on
// regtest in a directory of its own.
type electrumWallet struct {
	t   *testing.T
	bin string
	dir string
}

func newElectrumWallet(t *testing.T) *electrumWallet {
	t.Helper()
	bin, err := exec.LookPath("electrum")
	if err != nil {
		t.Skip("electrum is not installed; scripts/test.sh installs it (apt-get install electrum, Debian's 4.3.4)")
	}
	return &electrumWallet{t: t, bin: bin, dir: t.TempDir()}
}

// run runs one electrum command and returns its output.
func (w *electrumWallet) run(args ...string) (string, error) {
	cmd := exec.Command(w.bin, append([]string{"--regtest", "-D", w.dir}, args...)...)
	cmd.Env = append(cmd.Environ(), "HOME="+w.dir)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (w *electrumWallet) must(args ...string) string {
	w.t.Helper()
	out, err := w.run(args...)
	if err != nil {
		w.t.Fatalf("electrum %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// configure points the wallet at one server, over TCP (":t"), and at no
// other: what `electrum setconfig` writes, written at once.
func (w *electrumWallet) configure(t *testing.T, server string) {
	t.Helper()
	path := filepath.Join(w.dir, "regtest", "config")
	config := map[string]any{}
	if raw, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(raw, &config); err != nil {
			t.Fatalf("electrum's config %s: %v", path, err)
		}
	}
	config["oneserver"], config["auto_connect"], config["server"] = true, false, server+":t"
	if config["config_version"] == nil {
		config["config_version"] = 3 // Electrum 4.3's; an older one is upgraded, losing these
	}
	raw, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(raw))
}

// electrumAddrOf is the Electrum listener's address the daemon logged.
func electrumAddrOf(t *testing.T, d *daemon) string {
	t.Helper()
	m := regexp.MustCompile(`electrum=(\S+)`).FindStringSubmatch(d.log())
	if m == nil {
		t.Fatalf("the daemon logged no Electrum listener:\n%s", d.log())
	}
	return m[1]
}

type walletTx struct {
	TxID          string `json:"txid"`
	Height        int32  `json:"height"`
	Confirmations int32  `json:"confirmations"`
}

// history is the wallet's on-chain history.
func (w *electrumWallet) history() ([]walletTx, error) {
	out, err := w.run("onchain_history")
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	var h struct {
		Transactions []walletTx `json:"transactions"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	return h.Transactions, nil
}

// TestElectrumWallet: Debian's Electrum wallet, restored from a seed,
// syncs from `serve --peer --index --electrum` following a btcd regtest
// node that mined to it: it verifies every header and the merkle proof of
// every transaction it shows (it counts confirmations only of verified
// ones), shows the balance the chain gives it, pays, and sees the payment
// confirmed once btcd mines it.
func TestElectrumWallet(t *testing.T) {
	w := newElectrumWallet(t)
	w.must("--offline", "restore", walletSeed)
	var addrs []string
	if err := json.Unmarshal([]byte(w.must("--offline", "listaddresses", "--receiving")), &addrs); err != nil || len(addrs) == 0 {
		t.Fatalf("the wallet's addresses: %v %v", addrs, err)
	}
	node := btcdtest.BtcdRegtest.StartMiningTo(t, addrs[0])
	// Segregated witness, which the wallet's addresses need, activates on
	// regtest after three windows of 144 blocks (BIP9: started, locked
	// in, active).
	const mined = 432
	node.Generate(t, mined)

	d := startDaemon(t, "serve", "--create", "--index", "--network", "regtest", "--data", t.TempDir(),
		"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--electrum", "127.0.0.1:0", "--peer", node.P2P, "--ready-max-behind", "0")
	waitServedTip(t, d, node)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", d.log())
		}
	})
	w.configure(t, electrumAddrOf(t, d))
	w.must("daemon", "-d")
	t.Cleanup(func() { _, _ = w.run("stop") })
	w.must("load_wallet")

	// Every coinbase pays the wallet 50 BTC; one is mature when the next
	// block may spend it: it is 100 blocks below that block or deeper.
	_, tip := node.Tip(t)
	waitWallet(t, w, "the wallet to sync and verify the mined blocks", func(txs []walletTx) (bool, string) {
		confirmed := 0
		for _, tx := range txs {
			if tx.Confirmations == tip-tx.Height+1 && tx.Height > 0 {
				confirmed++
			}
		}
		return confirmed == mined, fmt.Sprintf("%d of %d coinbases verified", confirmed, mined)
	})
	var balance struct {
		Confirmed string `json:"confirmed"`
		Unmatured string `json:"unmatured"`
	}
	if err := json.Unmarshal([]byte(w.must("getbalance")), &balance); err != nil {
		t.Fatal(err)
	}
	var wantConfirmed, wantUnmatured btcutil.Amount
	for h := int32(1); h <= tip; h++ {
		hash, err := node.RPC.GetBlockHash(int64(h))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := node.Block(t, hash)
		if h+100 <= tip+1 {
			wantConfirmed += btcutil.Amount(b.Transactions[0].TxOut[0].Value)
		} else {
			wantUnmatured += btcutil.Amount(b.Transactions[0].TxOut[0].Value)
		}
	}
	if amount(t, balance.Confirmed) != wantConfirmed || amount(t, balance.Unmatured) != wantUnmatured {
		t.Fatalf("getbalance: %+v, want %v confirmed and %v unmatured", balance, wantConfirmed, wantUnmatured)
	}

	// Pay 1.5 BTC to an address of another key; the wallet builds and
	// signs it, the daemon relays it to btcd, btcd mines it.
	payee, err := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160([]byte("payee")), &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	signed := w.must("payto", payee.EncodeAddress(), "1.5", "--feerate", "2")
	txid := w.must("broadcast", signed)
	hash, err := chainhash.NewHashFromStr(txid)
	if err != nil {
		t.Fatalf("broadcast answered %q", txid)
	}
	waitInMempool(t, node, *hash)
	waitWallet(t, w, "the wallet to see its payment unconfirmed", func(txs []walletTx) (bool, string) {
		for _, tx := range txs {
			if tx.TxID == txid {
				return tx.Confirmations == 0, fmt.Sprintf("%+v", tx)
			}
		}
		return false, "not in the history"
	})
	// The payment as any client sees it while it is unmined: the payee's
	// unconfirmed balance, unspent output and mempool entry, and the fee
	// histogram holding it at the rate the wallet chose.
	c := dialElectrum(t, electrumAddrOf(t, d))
	payeeScript, err := txscript.PayToAddrScript(payee)
	if err != nil {
		t.Fatal(err)
	}
	payeeHash := scriptHash(payeeScript)
	var balanceNow struct{ Confirmed, Unconfirmed int64 }
	c.result(&balanceNow, "blockchain.scripthash.get_balance", payeeHash)
	if balanceNow != (struct{ Confirmed, Unconfirmed int64 }{0, 150_000_000}) {
		t.Errorf("the payee's balance while the payment is unmined: %+v", balanceNow)
	}
	var unspent []struct {
		TxHash string `json:"tx_hash"`
		Height int64  `json:"height"`
		Value  int64  `json:"value"`
	}
	c.result(&unspent, "blockchain.scripthash.listunspent", payeeHash)
	if len(unspent) != 1 || unspent[0].TxHash != txid || unspent[0].Height != 0 || unspent[0].Value != 150_000_000 {
		t.Errorf("the payee's unspent outputs: %+v", unspent)
	}
	var pool []struct {
		TxHash string `json:"tx_hash"`
		Height int64  `json:"height"`
		Fee    int64  `json:"fee"`
	}
	c.result(&pool, "blockchain.scripthash.get_mempool", payeeHash)
	if len(pool) != 1 || pool[0].TxHash != txid || pool[0].Height != 0 || pool[0].Fee <= 0 {
		t.Errorf("the payee's mempool: %+v", pool)
	}
	var histogram [][2]float64
	c.result(&histogram, "mempool.get_fee_histogram")
	if len(histogram) != 1 || histogram[0][0] < 1.9 || histogram[0][0] > 2.1 || histogram[0][1] < 100 {
		t.Errorf("the fee histogram of a mempool holding one payment at 2 sat/vB: %v", histogram)
	}

	node.Generate(t, 1)
	waitServedTip(t, d, node)
	_, tip = node.Tip(t)
	waitWallet(t, w, "the wallet to see its payment confirmed", func(txs []walletTx) (bool, string) {
		for _, tx := range txs {
			if tx.TxID == txid {
				return tx.Height == tip && tx.Confirmations == 1, fmt.Sprintf("%+v", tx)
			}
		}
		return false, "not in the history"
	})
	c.result(&balanceNow, "blockchain.scripthash.get_balance", payeeHash)
	if balanceNow != (struct{ Confirmed, Unconfirmed int64 }{150_000_000, 0}) {
		t.Errorf("the payee's balance once the payment is mined: %+v", balanceNow)
	}
	// The mined payment is served as the wallet signed it, witness
	// included: the follower asks btcd for blocks with their witnesses.
	var raw string
	c.result(&raw, "blockchain.transaction.get", txid)
	if raw != signed {
		t.Errorf("the mined payment is served as\n%s\nnot as the wallet signed it\n%s", raw, signed)
	}
}

func waitWallet(t *testing.T, w *electrumWallet, what string, cond func([]walletTx) (bool, string)) {
	t.Helper()
	btcdtest.WaitFor(t, 90*time.Second, what, func() (bool, string) {
		txs, err := w.history()
		if err != nil {
			return false, err.Error()
		}
		return cond(txs)
	})
}

// amount reads an amount in BTC as Electrum prints it.
func amount(t *testing.T, btc string) btcutil.Amount {
	t.Helper()
	f, err := strconv.ParseFloat(btc, 64)
	if err != nil {
		t.Fatalf("amount %q: %v", btc, err)
	}
	a, err := btcutil.NewAmount(f)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
