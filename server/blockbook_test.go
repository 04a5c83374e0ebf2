package server_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
	"github.com/gorilla/websocket"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// TestEstimateFeeReadsEachBlockOnce: the fee estimator keeps each recent
// block's rate so that a block is read once, and a second estimate over
// an unchanged chain reads no block again. It used to read each block
// (and look up each of its transactions in the index) to learn the hash
// it compared its kept rate with, so every estimate read up to 144 blocks.
func TestEstimateFeeReadsEachBlockOnce(t *testing.T) {
	srv, _ := indexedDaemon(t, 20, server.Options{})
	base := "http://" + srv.HTTPAddr()
	url := base + "/api/v2/estimatefee/1008"
	if code := getCode(t, url); code != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", url, code)
	}
	first := operations(t, base, "blockstore.Block")
	if first == 0 {
		t.Fatal("the first estimate read no block")
	}
	for i := 0; i < 5; i++ {
		if code := getCode(t, url); code != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d", url, code)
		}
	}
	if n := operations(t, base, "blockstore.Block"); n != first {
		t.Errorf("5 more estimates over the same chain read %d more blocks (the first read %d); want 0", n-first, first)
	}
}

// TestNotifyBlockReadsNoBlockAgain: with one websocket subscribed to
// addresses, every block connected is announced to it, and its
// transactions that touch a subscribed address are pushed, built from the
// block in hand. NotifyBlock used to look each transaction of the block
// up as a client's getTransaction does, reading and parsing the whole
// block from the block store once per transaction, whether it touched a
// subscribed address or not: quadratic in the block's transactions, for
// one client subscribed to any address, delaying every client's pushes.
func TestNotifyBlockReadsNoBlockAgain(t *testing.T) {
	const height = 2812 // 6 transactions
	srv, blocks := indexedDaemon(t, height+1, server.Options{})
	base := "http://" + srv.HTTPAddr()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+srv.HTTPAddr()+"/websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// An address no transaction of the block touches, and the output
	// script (in hex) of one that its transaction 1 pays.
	b := blocks[height]
	paid := hex.EncodeToString(b.Txs[1].Msg.TxOut[0].PkScript)
	sub := `{"id":"1","method":"subscribeAddresses","params":{"addresses":["1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa","` + paid + `"]}}`
	if err := ws.WriteMessage(websocket.TextMessage, []byte(sub)); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := ws.ReadMessage(); err != nil || !strings.Contains(string(msg), `"subscribed":true`) {
		t.Fatalf("subscribing: %s %v", msg, err)
	}
	before := operations(t, base, "blockstore.Block")
	srv.Blockbook().NotifyBlock(context.Background(), utxo.BlockFromChain(b, height))
	if reads := operations(t, base, "blockstore.Block") - before; reads != 0 {
		t.Errorf("notifying a block of %d transactions read the whole block %d times; want none", len(b.Txs), reads)
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("no push of the transaction paying the subscribed address: %v", err)
	}
	var push struct {
		ID   string
		Data struct {
			Address string
			Tx      struct {
				TxID        string
				BlockHeight int64
				BlockHash   string
			}
		}
	}
	if err := json.Unmarshal(msg, &push); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	tx := push.Data.Tx
	if push.ID != "1" || push.Data.Address != paid || tx.TxID != b.Txs[1].ID.String() || tx.BlockHeight != height || tx.BlockHash != b.Hash.String() {
		t.Errorf("pushed %s; want transaction %s of block %d to subscription 1 for %s", msg, b.Txs[1].ID, height, paid)
	}
}

// TestWebsocketGetBlockHashRefusesAHeightPastUint32: a height past
// uint32 names no block, and getBlockHash answers it with an error. It
// used to hand the height to the block-index route's parser, which takes
// what is not a uint32 for no height and answers the tip's hash.
func TestWebsocketGetBlockHashRefusesAHeightPastUint32(t *testing.T) {
	srv, _ := indexedDaemon(t, 3, server.Options{})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+srv.HTTPAddr()+"/websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	req := `{"id":"1","method":"getBlockHash","params":{"height":4294967296}}`
	if err := ws.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(msg), `"error"`) || !strings.Contains(string(msg), "4294967296") {
		t.Errorf("getBlockHash of height 4294967296 answered %s; want an error naming the height", msg)
	}
}

// TestAnAddressPageReadsEachBlockOnce: an address's page of transactions
// (details=txs) reads each block its transactions are in once. Each
// transaction was looked up on its own, reading and parsing its whole
// block again: a page of 1,000 transactions of one block read it 1,000
// times.
func TestAnAddressPageReadsEachBlockOnce(t *testing.T) {
	// Five transactions of block 2812 and five of 2813 touch this address.
	const script = "76a9146934efcef36903b5b45ebd1e5f862d1b63a99fa588ac"
	srv, _ := indexedDaemon(t, 2814, server.Options{})
	base := "http://" + srv.HTTPAddr()
	resp, err := http.Get(base + "/api/v2/address/" + script + "?details=txs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Transactions []struct{ BlockHeight int64 }
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %v", resp.StatusCode, err)
	}
	blocks := map[int64]bool{}
	for _, tx := range page.Transactions {
		blocks[tx.BlockHeight] = true
	}
	if len(page.Transactions) <= len(blocks) {
		t.Fatalf("%d transactions in %d blocks: no block holds two", len(page.Transactions), len(blocks))
	}
	if reads := operations(t, base, "blockstore.Block"); reads != len(blocks) {
		t.Errorf("a page of %d transactions in %d blocks read %d blocks", len(page.Transactions), len(blocks), reads)
	}
}

// TestAnUnminedTransactionIsPushedToItsAddressSubscribers: a transaction
// the store takes unmined (from the follower, a gRPC client or sendtx)
// is pushed to the websocket clients subscribed to an address it pays, as
// Blockbook pushes its mempool's transactions. The daemon used to push
// only mined ones.
func TestAnUnminedTransactionIsPushedToItsAddressSubscribers(t *testing.T) {
	ctx := context.Background()
	path, chainBlocks := indexedPathAt(t, 2, 2)
	srv, _ := servePathForTest(t, path, server.Options{Network: "mainnet"})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+srv.HTTPAddr()+"/websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))

	// An unmined transaction spends block 1's coinbase to a P2PKH address.
	const address = "1BoatSLRHtKNngkdXEeobR76b53LETtpyT"
	addr, err := btcutil.DecodeAddress(address, &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	pkh, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	spend := wire.NewMsgTx(1)
	spend.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainBlocks[1].Txs[0].ID}, []byte{0x51}, nil))
	spend.AddTxOut(wire.NewTxOut(49e8, pkh))

	if err := ws.WriteJSON(map[string]any{"id": "addresses", "method": "subscribeAddresses",
		"params": map[string]any{"addresses": []string{address}}}); err != nil {
		t.Fatal(err)
	}
	var answer map[string]any
	if err := ws.ReadJSON(&answer); err != nil || answer["id"] != "addresses" {
		t.Fatalf("subscribing: %v (%v)", answer, err)
	}
	if _, err := path.Store().Create(ctx, chain.NewTx(spend), 2); err != nil {
		t.Fatal(err)
	}
	var push struct {
		ID   string `json:"id"`
		Data struct {
			Address string `json:"address"`
			Tx      struct {
				Txid string `json:"txid"`
			} `json:"tx"`
		} `json:"data"`
	}
	if err := ws.ReadJSON(&push); err != nil {
		t.Fatalf("no push of the unmined transaction %s: %v", spend.TxHash(), err)
	}
	if push.ID != "addresses" || push.Data.Address != address || push.Data.Tx.Txid != spend.TxHash().String() {
		t.Fatalf("pushed %+v, want transaction %s to %s", push, spend.TxHash(), address)
	}
}

// TestAnAddressPageReadsEachUnminedTransactionOnce: the unconfirmed part
// of an address's page comes from a view of the store's unmined
// transactions, each read once when it first shows up, so a second page
// over an unchanged mempool reads none of them again, and a transaction
// added since is the only one read. Every page used to read every unmined
// transaction of the store, whatever the address.
func TestAnAddressPageReadsEachUnminedTransactionOnce(t *testing.T) {
	ctx := context.Background()
	path, chainBlocks := indexedPathAt(t, 2, 2)
	srv, _ := servePathForTest(t, path, server.Options{Network: "mainnet"})
	base := "http://" + srv.HTTPAddr()
	const address = "1BoatSLRHtKNngkdXEeobR76b53LETtpyT"
	addr, err := btcutil.DecodeAddress(address, &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	pay := func(vout uint32) {
		t.Helper()
		tx := wire.NewMsgTx(1)
		tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainBlocks[1].Txs[0].ID, Index: vout}, []byte{0x51}, nil))
		tx.AddTxOut(wire.NewTxOut(1000, script))
		if _, err := path.Store().Create(ctx, chain.NewTx(tx), 2); err != nil {
			t.Fatal(err)
		}
	}
	page := func(want int) {
		t.Helper()
		resp, err := http.Get(base + "/api/v2/address/" + address)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a struct {
			UnconfirmedTxs int `json:"unconfirmedTxs"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("address page: HTTP %d, %v", resp.StatusCode, err)
		}
		if a.UnconfirmedTxs != want {
			t.Fatalf("the page shows %d unconfirmed transactions, want %d", a.UnconfirmedTxs, want)
		}
	}
	for vout := range uint32(3) {
		pay(vout)
	}
	page(3)
	before := operations(t, base, "Get")
	page(3)
	if n := operations(t, base, "Get") - before; n != 0 {
		t.Fatalf("a second page over the same mempool read %d transactions", n)
	}
	pay(3)
	before = operations(t, base, "Get")
	page(4)
	if n := operations(t, base, "Get") - before; n != 1 {
		t.Fatalf("a page after one more transaction read %d transactions, want 1", n)
	}
}

// TestASpenderIsLookedUpInTheBlocksOfInputsOfItsValue: ?spending=true on
// a transaction whose record the store has pruned finds the spender of
// each output in the address index, as Blockbook does: among the inputs
// of the output's address since the transaction, reading only the blocks
// of those that spend as much as the output holds. Block 9's coinbase
// paid 12cbQLTFMXRnSzktFkuoG3eHoMeFtpTu3S, which spent coins in several
// later blocks; its output was spent by block 170's first transaction.
// The lookup used to read and parse every one of those blocks.
func TestASpenderIsLookedUpInTheBlocksOfInputsOfItsValue(t *testing.T) {
	const coinbase9 = "0437cd7f8525ceed2324359c2d0ba26006d92d856a9c20fa0241106ee5a597c9"
	srv, _ := indexedDaemon(t, 1000, server.Options{})
	base := "http://" + srv.HTTPAddr()
	var record struct{ Utxostore *struct{} }
	getJSON(t, base+"/api/v2/tx/"+coinbase9, &record)
	if record.Utxostore != nil {
		t.Fatalf("the store still holds %s: its spender is read from the record, not looked up", coinbase9)
	}
	before := operations(t, base, "blockstore.Block")
	var tx spendingTx
	getJSON(t, base+"/api/v2/tx/"+coinbase9+"?spending=true", &tx)
	if len(tx.Vout) != 1 || tx.Vout[0].SpentTxID != "f4184fc596403b9d638783cf57adfe4c75c605f6356fbc91338530e9831e9e16" ||
		tx.Vout[0].SpentIndex != 0 || tx.Vout[0].SpentHeight != 170 {
		t.Fatalf("outputs %+v, want the one spent by block 170's f4184fc5…:0", tx.Vout)
	}
	if reads := operations(t, base, "blockstore.Block") - before; reads != 2 {
		t.Errorf("?spending=true read %d blocks, want 2: the transaction's and its spender's", reads)
	}
}

// spendingTx is what the spending tests read of a transaction.
type spendingTx struct {
	Vout []struct {
		SpentTxID   string `json:"spentTxId"`
		SpentIndex  int    `json:"spentIndex"`
		SpentHeight int    `json:"spentHeight"`
	}
}

// getJSON decodes the JSON answer of a GET of url into v, failing the
// test on any status but 200.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestASpenderLookupSkipsTheBlocksOfInputsOfOtherValues: the test's own
// chain pays an address A 7 BTC at block 102 (in T, whose record the store
// then prunes) and 20 BTC in U; block 103 spends U's coin of A and block
// 105 T's. Walking A's inputs from block 102, ?spending=true on T reads
// block 105, and not block 103, whose input of A spends another value.
func TestASpenderLookupSkipsTheBlocksOfInputsOfOtherValues(t *testing.T) {
	ctx := context.Background()
	scriptA := append(append([]byte{0x76, 0xa9, 0x14}, bytes.Repeat([]byte{0xaa}, 20)...), 0x88, 0xac)
	scriptB := append(append([]byte{0x76, 0xa9, 0x14}, bytes.Repeat([]byte{0xbb}, 20)...), 0x88, 0xac)
	spend := func(outs []*wire.TxOut, ins ...wire.OutPoint) *wire.MsgTx {
		tx := wire.NewMsgTx(1)
		for _, in := range ins {
			tx.AddTxIn(wire.NewTxIn(&in, nil, nil))
		}
		for _, o := range outs {
			tx.AddTxOut(o)
		}
		return tx
	}
	path := indexedPathOf(t, true)
	var blocks []*chain.Block
	prev := chainhash.Hash{}
	add := func(txs ...*wire.MsgTx) {
		b := ownBlockOf(t, prev, uint32(len(blocks)), scriptB, txs...)
		if err := path.Connect(ctx, b, uint32(len(blocks))); err != nil {
			t.Fatalf("block %d: %v", len(blocks), err)
		}
		blocks, prev = append(blocks, b), b.Hash
	}
	for len(blocks) < 102 {
		add()
	}
	coinbase := func(height int) wire.OutPoint { return wire.OutPoint{Hash: blocks[height].Txs[0].ID} }
	T := spend([]*wire.TxOut{wire.NewTxOut(7e8, scriptA), wire.NewTxOut(43e8, scriptB)}, coinbase(1))
	U := spend([]*wire.TxOut{wire.NewTxOut(20e8, scriptA), wire.NewTxOut(30e8, scriptB)}, coinbase(2))
	add(T, U)                                                                                // 102
	add(spend([]*wire.TxOut{wire.NewTxOut(20e8, scriptB)}, wire.OutPoint{Hash: U.TxHash()})) // 103
	add()                                                                                    // 104
	S := spend([]*wire.TxOut{wire.NewTxOut(50e8, scriptB)}, wire.OutPoint{Hash: T.TxHash()}, wire.OutPoint{Hash: T.TxHash(), Index: 1})
	add(S) // 105
	for len(blocks) < 105+utxo.DefaultBlockHeightRetention+2 {
		add()
	}
	if _, err := path.Store().Get(ctx, T.TxHash()); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("T's record: %v, want it pruned", err)
	}
	srv, _ := servePathForTest(t, path, server.Options{Network: "mainnet"})
	base := "http://" + srv.HTTPAddr()
	before := operations(t, base, "blockstore.Block")
	var tx spendingTx
	getJSON(t, base+"/api/v2/tx/"+T.TxHash().String()+"?spending=true", &tx)
	for i, v := range tx.Vout {
		if v.SpentTxID != S.TxHash().String() || v.SpentIndex != i || v.SpentHeight != 105 {
			t.Errorf("output %d: %+v, want spent by %s:%d at 105", i, v, S.TxHash(), i)
		}
	}
	if reads := operations(t, base, "blockstore.Block") - before; reads != 2 {
		t.Errorf("?spending=true read %d blocks, want 2: T's and S's", reads)
	}
}

// TestBlockbookAnswersEmptyArgumentsAndUnknownCallsWithJSON: as
// Blockbook's handlers do, block-index with no height names the tip, and
// a call with an empty argument answers its error as JSON; a path under
// /api/ that names no call is answered 404, also as JSON. They used to be
// answered with Go's plain-text "404 page not found", which a client
// parsing the API's JSON cannot read.
func TestBlockbookAnswersEmptyArgumentsAndUnknownCallsWithJSON(t *testing.T) {
	srv, blocks := indexedDaemon(t, 3, server.Options{})
	base := "http://" + srv.HTTPAddr()
	var index struct {
		BlockHash string `json:"blockHash"`
	}
	getJSON(t, base+"/api/v2/block-index/", &index)
	if index.BlockHash != blocks[2].Hash.String() {
		t.Errorf("block-index with no height names %s, want the tip %s", index.BlockHash, blocks[2].Hash)
	}
	for path, want := range map[string]int{
		"/api/v2/tx/":            http.StatusBadRequest,
		"/api/v2/address/":       http.StatusBadRequest,
		"/api/v2/estimatefee/":   http.StatusBadRequest,
		"/api/v2/no-such-call/1": http.StatusNotFound,
		"/api/tx/a/b":            http.StatusNotFound,
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			Error string `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if resp.StatusCode != want || err != nil || answer.Error == "" {
			t.Errorf("GET %s: HTTP %d (want %d), error %q (%v)", path, resp.StatusCode, want, answer.Error, err)
		}
	}
}
