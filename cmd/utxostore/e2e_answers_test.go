package main

import (
	"context"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/client"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// seededDaemon seeds a mainnet store with demo's synthetic chain of blocks
// (seed 1, with the address index) and serves it with extra args. The
// returned chain is the same one, built here, so tests know its
// transactions.
func seededDaemon(t *testing.T, blocks int, extra ...string) (*daemon, *demoChain) {
	t.Helper()
	data := t.TempDir()
	if _, stderr, err := run(t, "demo", "--network", "mainnet", "--data", data, "--index", "--blocks", strconv.Itoa(blocks), "--exit-after-seed"); err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr)
	}
	args := append([]string{"serve", "--data", data, "--index", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, extra...)
	gen := newDemoChain(1)
	gen.build(blocks)
	return startDaemon(t, args...), gen
}

// unspentOutput is an output of the chain's last non-coinbase transactions
// that nothing spends, with its script.
func (c *demoChain) unspentOutput(t *testing.T) (wire.OutPoint, *wire.TxOut) {
	t.Helper()
	for _, coin := range c.pool {
		if coin.coinbase {
			continue
		}
		for _, b := range c.blocks {
			for _, tx := range b.Txs {
				if tx.ID == coin.out.Hash {
					return coin.out, tx.Msg.TxOut[coin.out.Index]
				}
			}
		}
	}
	t.Fatal("the synthetic chain has no unspent non-coinbase output")
	return wire.OutPoint{}, nil
}

func dialDaemon(t *testing.T, d *daemon, token string) *client.Client {
	t.Helper()
	c, err := client.Dial(d.grpc, client.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestAnswersAgreeAfterAnUnminedSpend: a spend sent over gRPC by a
// transaction no block holds shows at once in /api/status?summary=true (the
// summary is not kept across writes), as spent in /api/v2/tx, as left out of
// /api/v2/utxo (kept with ?confirmed=true) and as a negative unconfirmed
// balance in /api/v2/address, as Blockbook separates mempool from blocks.
func TestAnswersAgreeAfterAnUnminedSpend(t *testing.T) {
	d, gen := seededDaemon(t, 120)
	base := "http://" + d.http
	out, prev := gen.unspentOutput(t)
	desc := hex.EncodeToString(prev.PkScript)

	type statusShape struct {
		Utxostore struct {
			Utxos    uint64 `json:"utxos"`
			Satoshis uint64 `json:"satoshis"`
		} `json:"utxostore"`
	}
	var before statusShape
	getJSON(t, base+"/api/status?summary=true", &before)
	type utxoShape []struct {
		Txid string `json:"txid"`
		Vout uint32 `json:"vout"`
	}
	var utxosBefore utxoShape
	getJSON(t, base+"/api/v2/utxo/"+desc, &utxosBefore)
	if len(utxosBefore) != 1 || utxosBefore[0].Txid != out.Hash.String() || utxosBefore[0].Vout != out.Index {
		t.Fatalf("/api/v2/utxo before the spend: want %s, got %+v", out, utxosBefore)
	}

	spender := wire.NewMsgTx(1)
	spender.AddTxIn(&wire.TxIn{PreviousOutPoint: out, SignatureScript: []byte{0x51}})
	spender.AddTxOut(wire.NewTxOut(prev.Value-1000, demoScript(0xfeed)))
	tx := chain.NewTx(spender)
	c := dialDaemon(t, d, "")
	ctx := testContext(t)
	if _, err := c.Spend(ctx, tx); err != nil {
		t.Fatalf("spend: %v", err)
	}

	var after statusShape
	getJSON(t, base+"/api/status?summary=true", &after)
	if after.Utxostore.Utxos != before.Utxostore.Utxos-1 || after.Utxostore.Satoshis != before.Utxostore.Satoshis-uint64(prev.Value) {
		t.Errorf("/api/status?summary=true after the spend: want %d utxos and %d satoshis, got %+v", before.Utxostore.Utxos-1,
			before.Utxostore.Satoshis-uint64(prev.Value), after.Utxostore)
	}
	var txAnswer struct {
		Vout []struct {
			Spent     bool   `json:"spent"`
			SpentTxID string `json:"spentTxId"`
		} `json:"vout"`
	}
	getJSON(t, base+"/api/v2/tx/"+out.Hash.String(), &txAnswer)
	if !txAnswer.Vout[out.Index].Spent || txAnswer.Vout[out.Index].SpentTxID != tx.ID.String() {
		t.Errorf("/api/v2/tx: want vout %d spent by %s, got %+v", out.Index, tx.ID, txAnswer.Vout)
	}
	var utxosAfter, confirmed utxoShape
	getJSON(t, base+"/api/v2/utxo/"+desc, &utxosAfter)
	if len(utxosAfter) != 0 {
		t.Errorf("/api/v2/utxo after the spend: want the spent output left out, got %+v", utxosAfter)
	}
	getJSON(t, base+"/api/v2/utxo/"+desc+"?confirmed=true", &confirmed)
	if len(confirmed) != 1 {
		t.Errorf("/api/v2/utxo?confirmed=true: want the output the blocks leave unspent, got %+v", confirmed)
	}
	var addr struct {
		Balance            string `json:"balance"`
		UnconfirmedBalance string `json:"unconfirmedBalance"`
		UnconfirmedTxs     int    `json:"unconfirmedTxs"`
	}
	getJSON(t, base+"/api/v2/address/"+desc, &addr)
	if addr.Balance != strconv.Itoa(int(prev.Value)) || addr.UnconfirmedBalance != "-"+strconv.Itoa(int(prev.Value)) || addr.UnconfirmedTxs != 1 {
		t.Errorf("/api/v2/address: want balance %d, unconfirmed -%d in 1 tx, got %+v", prev.Value, prev.Value, addr)
	}
}

// TestGetSpendPastTheLastRecord: an output number past every record of a
// transaction is UTXO_NOT_FOUND for that output, not TX_NOT_FOUND.
func TestGetSpendPastTheLastRecord(t *testing.T) {
	d, gen := seededDaemon(t, 3)
	c := dialDaemon(t, d, "")
	ctx := testContext(t)
	coinbase := gen.blocks[1].Txs[0].ID
	for _, vout := range []uint32{1, 20_000, 4_000_000_000} {
		_, err := c.GetSpend(ctx, &utxo.Spend{TxID: coinbase, Vout: vout})
		if !errors.Is(err, model.ErrUtxoNotFound) || !strings.Contains(err.Error(), coinbase.String()+":"+strconv.Itoa(int(vout))) {
			t.Errorf("GetSpend %s:%d: want UTXO_NOT_FOUND naming the output, got %v", coinbase, vout, err)
		}
	}
	var missing chainhash.Hash
	missing[0] = 1
	if _, err := c.GetSpend(ctx, &utxo.Spend{TxID: missing, Vout: 20_000}); !errors.Is(err, model.ErrTxNotFound) {
		t.Errorf("GetSpend of a missing transaction's output 20000: want TX_NOT_FOUND, got %v", err)
	}
}

// TestAddressPagingAndNetworks: paging parameters are clamped as Blockbook
// clamps them (a value that does not parse takes its default, a pageSize
// over 1000 is 1000, a page past the end is the last page, a huge page
// does not overflow), and bech32 addresses of another network are refused
// like base58 ones.
func TestAddressPagingAndNetworks(t *testing.T) {
	d, gen := seededDaemon(t, 3)
	base := "http://" + d.http
	desc := hex.EncodeToString(gen.blocks[1].Txs[0].Msg.TxOut[0].PkScript)
	type pageShape struct {
		Page        int `json:"page"`
		TotalPages  int `json:"totalPages"`
		ItemsOnPage int `json:"itemsOnPage"`
	}
	for query, want := range map[string]pageShape{
		"?page=4611686018427387905&pageSize=2": {1, 1, 2},
		"?page=4294967296":                     {1, 1, 1000},
		"?from=4294967296":                     {1, 1, 1000},
		"?to=18446744073709551617":             {1, 1, 1000},
		"?page=-1":                             {1, 1, 1000},
		"?pageSize=1001":                       {1, 1, 1000},
		"?pageSize=0":                          {1, 1, 1000},
	} {
		var got pageShape
		getJSON(t, base+"/api/v2/address/"+desc+query, &got)
		if got != want {
			t.Errorf("address%s: want paging %+v, got %+v", query, want, got)
		}
	}
	var page struct {
		Page       int      `json:"page"`
		TotalPages int      `json:"totalPages"`
		Txids      []string `json:"txids"`
	}
	getJSON(t, base+"/api/v2/address/"+desc+"?page=4294967295&pageSize=1", &page)
	if page.Page != 1 || page.TotalPages != 1 || len(page.Txids) != 1 || page.Txids[0] != gen.blocks[1].Txs[0].ID.String() {
		t.Errorf("a page past the end: want the last page (1 of 1), got %+v", page)
	}

	hash := make([]byte, 20)
	for _, params := range []*chaincfg.Params{&chaincfg.TestNet3Params, &chaincfg.RegressionNetParams, &chaincfg.SigNetParams} {
		for _, addr := range addressesOn(t, params, hash) {
			for _, path := range []string{"/api/v2/address/", "/api/v2/utxo/"} {
				if code, body := httpGet(t, base+path+addr); code != 400 || !strings.Contains(body, "mainnet") {
					t.Errorf("%s%s (%s) on a mainnet daemon: want 400 naming mainnet, got %d %s", path, addr, params.Name, code, body)
				}
			}
		}
	}
	for _, addr := range addressesOn(t, &chaincfg.MainNetParams, hash) {
		if code, body := httpGet(t, base+"/api/v2/address/"+addr); code != 200 {
			t.Errorf("mainnet address %s: want 200, got %d %s", addr, code, body)
		}
	}
}

// addressesOn returns a base58 and a bech32 address of params.
func addressesOn(t *testing.T, params *chaincfg.Params, hash []byte) []string {
	t.Helper()
	p2pkh, err := btcutil.NewAddressPubKeyHash(hash, params)
	if err != nil {
		t.Fatal(err)
	}
	p2wpkh, err := btcutil.NewAddressWitnessPubKeyHash(hash, params)
	if err != nil {
		t.Fatal(err)
	}
	return []string{p2pkh.EncodeAddress(), p2wpkh.EncodeAddress()}
}

// TestSpendRefusesWhatIsNoSpend: a transaction without inputs, and one that
// spends the same output twice, are INVALID_SPEND and change nothing.
func TestSpendRefusesWhatIsNoSpend(t *testing.T) {
	d, gen := seededDaemon(t, 120)
	c := dialDaemon(t, d, "")
	ctx := testContext(t)
	out, prev := gen.unspentOutput(t)

	empty := chain.NewTx(wire.NewMsgTx(1))
	twice := wire.NewMsgTx(1)
	twice.AddTxIn(&wire.TxIn{PreviousOutPoint: out})
	twice.AddTxIn(&wire.TxIn{PreviousOutPoint: out})
	twice.AddTxOut(wire.NewTxOut(prev.Value-1000, demoScript(0xbeef)))
	for _, tc := range []struct {
		name string
		tx   *chain.Tx
		want string
	}{
		{"no inputs, no outputs", empty, "no inputs"},
		{"one output spent twice", chain.NewTx(twice), "inputs 0 and 1 both spend " + out.String()},
	} {
		_, err := c.Spend(ctx, tc.tx)
		if !errors.Is(err, model.ErrInvalidSpend) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want INVALID_SPEND saying %q, got %v", tc.name, tc.want, err)
		}
	}
	resp, err := c.GetSpend(ctx, &utxo.Spend{TxID: out.Hash, Vout: out.Index})
	if err != nil || resp.Status != utxo.StatusUnspent {
		t.Errorf("%s after the refused spends: want unspent, got %+v, %v", out, resp, err)
	}
}

// TestErrorsCutWhatTheyEcho: an error repeats at most the start of a bogus
// value, not all 900 KB of it.
func TestErrorsCutWhatTheyEcho(t *testing.T) {
	d, _ := seededDaemon(t, 3)
	base := "http://" + d.http
	bogus := strings.Repeat("z", 900<<10)
	for _, path := range []string{"/api/v2/tx/", "/api/v2/block/", "/api/v2/address/", "/api/v2/utxo/"} {
		code, body := httpGet(t, base+path+bogus)
		if code != 400 || len(body) > 1024 || !strings.Contains(body, "zzzz") || !strings.Contains(body, "921600 bytes") {
			t.Errorf("%s<900 KB>: want a 400 under 1 KiB naming the start and the size, got %d with %d bytes: %.300s", path, code, len(body), body)
		}
	}
}
