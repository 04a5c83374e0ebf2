package blockbook

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
)

// TestParseBlockReadsABlockOfOver400001Transactions: the block path
// (chain.ParseBlock) takes a block of more than 400,001 transactions, as
// BSV mainnet has, so the block store holds such blocks. The API's
// parseBlock read blocks with wire.MsgBlock.Deserialize, which refuses
// more than 4 MB / 10 bytes of transactions: tx, block, estimatefee and
// the websocket's pushes failed for every transaction of the block.
func TestParseBlockReadsABlockOfOver400001Transactions(t *testing.T) {
	const n = 400_002
	var buf bytes.Buffer
	hdr := wire.BlockHeader{Version: 1}
	if err := hdr.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteVarInt(&buf, 0, n); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		tx := wire.NewMsgTx(1)
		prev := chainhash.Hash{byte(i), byte(i >> 8), byte(i >> 16), 1}
		tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&prev, 0), nil, nil))
		tx.AddTxOut(wire.NewTxOut(1, []byte{0x51}))
		if err := tx.Serialize(&buf); err != nil {
			t.Fatal(err)
		}
	}
	raw := buf.Bytes()
	if _, err := chain.ParseBlock(raw); err != nil {
		t.Fatalf("the block path's parser refuses it too: %v", err)
	}
	mb, err := parseBlock(raw, 1)
	if err != nil {
		t.Fatalf("a %d-byte block of %d transactions the block path takes: %v", len(raw), n, err)
	}
	if len(mb.Txs) != n {
		t.Errorf("parsed %d transactions, want %d", len(mb.Txs), n)
	}
}

// TestParseBlockTakesATransactionOfOver4MiBOfScripts: BSV has no script
// size limit, and the block path takes a transaction whose scripts add up
// to more than 4 MiB. wire.MsgBlock.Deserialize, which the API's
// parseBlock used, panics on it (its script buffer is 4 MiB), and nothing
// recovers in the websocket's worker: a getTransaction of such a
// transaction ended the daemon.
func TestParseBlockTakesATransactionOfOver4MiBOfScripts(t *testing.T) {
	var buf bytes.Buffer
	hdr := wire.BlockHeader{Version: 1}
	if err := hdr.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteVarInt(&buf, 0, 1); err != nil {
		t.Fatal(err)
	}
	tx := wire.NewMsgTx(1)
	prev := chainhash.Hash{1}
	tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&prev, 0), nil, nil))
	data := append([]byte{0x00, 0x6a}, make([]byte, 3_000_000)...) // OP_FALSE OP_RETURN <data>, twice
	tx.AddTxOut(wire.NewTxOut(0, data))
	tx.AddTxOut(wire.NewTxOut(0, data))
	if err := tx.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	if _, err := chain.ParseBlock(raw); err != nil {
		t.Fatalf("the block path's parser refuses it too: %v", err)
	}
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("parseBlock panicked on a block the block path takes: %v", r)
		}
	}()
	mb, err := parseBlock(raw, 1)
	if err != nil {
		t.Fatalf("parseBlock: %v", err)
	}
	if got := mb.Txs[0].ID; got != tx.TxHash() {
		t.Errorf("the transaction parsed as %s, want %s", got, tx.TxHash())
	}
}
