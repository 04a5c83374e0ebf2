package main

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
)

// TestUnminedTxShowsAsMempool: a transaction the store holds unmined
// (created and spent over gRPC, in no block) shows as Blockbook shows its
// mempool: confirmations 0 and blockHeight -1 with its fee, an unconfirmed
// balance and transaction on both addresses it touches, listed first, and
// a UTXO with 0 confirmations that ?confirmed=true leaves out.
func TestUnminedTxShowsAsMempool(t *testing.T) {
	d, gen := seededDaemon(t, 120)
	base := "http://" + d.http
	out, prev := gen.unspentOutput(t)
	const fee = 1000
	receiver := demoScript(0xbeef)
	spender := wire.NewMsgTx(1)
	spender.AddTxIn(&wire.TxIn{PreviousOutPoint: out, SignatureScript: []byte{0x51}})
	spender.AddTxOut(wire.NewTxOut(prev.Value-fee, receiver))
	tx := chain.NewTx(spender)
	c := dialDaemon(t, d, "")
	ctx := testContext(t)
	if _, err := c.Create(ctx, tx, 120); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := c.Spend(ctx, tx); err != nil {
		t.Fatalf("spend: %v", err)
	}

	var got struct {
		Confirmations int    `json:"confirmations"`
		BlockHeight   int    `json:"blockHeight"`
		ValueIn       string `json:"valueIn"`
		Fees          string `json:"fees"`
	}
	getJSON(t, base+"/api/v2/tx/"+tx.ID.String(), &got)
	if got.Confirmations != 0 || got.BlockHeight != -1 || got.ValueIn != strconv.Itoa(int(prev.Value)) || got.Fees != strconv.Itoa(fee) {
		t.Errorf("/api/v2/tx of the unmined tx: %+v", got)
	}

	type account struct {
		Balance            string   `json:"balance"`
		UnconfirmedBalance string   `json:"unconfirmedBalance"`
		UnconfirmedTxs     int      `json:"unconfirmedTxs"`
		Txids              []string `json:"txids"`
	}
	var to, from account
	getJSON(t, base+"/api/v2/address/"+hex.EncodeToString(receiver), &to)
	if to.Balance != "0" || to.UnconfirmedBalance != strconv.Itoa(int(prev.Value-fee)) || to.UnconfirmedTxs != 1 ||
		len(to.Txids) != 1 || to.Txids[0] != tx.ID.String() {
		t.Errorf("the receiving address: %+v", to)
	}
	getJSON(t, base+"/api/v2/address/"+hex.EncodeToString(prev.PkScript), &from)
	if from.UnconfirmedBalance != "-"+strconv.Itoa(int(prev.Value)) || from.UnconfirmedTxs != 1 || from.Txids[0] != tx.ID.String() {
		t.Errorf("the spending address: %+v", from)
	}

	var utxos []struct {
		Txid          string `json:"txid"`
		Confirmations int    `json:"confirmations"`
		Height        int    `json:"height"`
	}
	getJSON(t, base+"/api/v2/utxo/"+hex.EncodeToString(receiver), &utxos)
	if len(utxos) != 1 || utxos[0].Txid != tx.ID.String() || utxos[0].Confirmations != 0 || utxos[0].Height != 0 {
		t.Errorf("the receiving address's UTXOs: %+v", utxos)
	}
	utxos = nil
	getJSON(t, base+"/api/v2/utxo/"+hex.EncodeToString(receiver)+"?confirmed=true", &utxos)
	if len(utxos) != 0 {
		t.Errorf("?confirmed=true: want no UTXO, got %+v", utxos)
	}
}

// TestBlockbookErrors: malformed input gets Blockbook's error JSON,
// {"error": "..."}, with Blockbook's status (400 for what the caller got
// wrong, including what is not found), a huge value is not echoed back
// whole, and sendtx says why it cannot answer (503) while no node is
// connected.
func TestBlockbookErrors(t *testing.T) {
	d, _ := seededDaemon(t, 3)
	base := "http://" + d.http
	huge := strings.Repeat("f", 100_000)
	for path, want := range map[string]int{
		"/api/v2/tx/00":                          400,
		"/api/v2/tx/" + strings.Repeat("ab", 32): 400,
		"/api/v2/tx/" + huge:                     400,
		"/api/v2/tx-specific/xyz":                400,
		"/api/v2/tx/" + strings.Repeat("ab", 32) + "?spending=maybe": 400,
		"/api/v2/block/notablock":                                    400,
		"/api/v2/block/99999":                                        400,
		"/api/v2/block-index/99999":                                  400,
		"/api/v2/address/not-an-address":                             400,
		"/api/v2/address/" + huge:                                    400,
		"/api/v2/xpub/xpubnotakey":                                   400,
		"/api/v2/utxo/not-an-address":                                400,
		"/api/v2/utxo/51?confirmed=perhaps":                          400,
		"/api/v2/balancehistory/51?from=yesterday":                   400,
		"/api/v2/estimatefee/two":                                    400,
		"/api/v2/sendtx/0100":                                        503,
	} {
		code, body := httpGet(t, base+path)
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); code != want || err != nil || e.Error == "" {
			t.Errorf("GET %.60s: want %d with {\"error\": ...}, got %d %.300s", path, want, code, body)
		}
		if len(body) > 1000 {
			t.Errorf("GET %.60s: the error echoes %d bytes", path, len(body))
		}
		if want == 503 && !strings.Contains(e.Error, "no Bitcoin node is connected") {
			t.Errorf("GET %s: the 503 does not say why: %s", path, e.Error)
		}
	}
}
