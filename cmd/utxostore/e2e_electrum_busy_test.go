package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// busyChain writes a regtest chain in which one script is paid by txs
// transactions, perBlock to a block, after regtest's genesis block and
// 101 blocks of coinbases: each transaction spends the previous one's
// change and pays the script 1,000 satoshis. It returns the blk file, the script, and its history in
// order (txid and height).
func busyChain(t *testing.T, txs, perBlock int) (path string, script []byte, history []histItem) {
	t.Helper()
	script = []byte{0x51, 0x04, 'b', 'u', 's', 'y'}
	change := []byte{0x51}
	var file bytes.Buffer
	var prev chainhash.Hash
	var coin wire.OutPoint
	value := int64(50e8)
	write := func(height uint32, body []*wire.MsgTx) {
		cb := wire.NewMsgTx(1)
		cb.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: wire.MaxPrevOutIndex},
			SignatureScript: binary.LittleEndian.AppendUint32([]byte{0x04}, height), Sequence: wire.MaxTxInSequenceNum})
		cb.AddTxOut(wire.NewTxOut(50e8, change))
		all := append([]*wire.MsgTx{cb}, body...)
		ids := make([]chainhash.Hash, len(all))
		for i, tx := range all {
			ids[i] = tx.TxHash()
		}
		msg := wire.MsgBlock{Header: wire.BlockHeader{Version: 1, PrevBlock: prev, MerkleRoot: merkleRootOf(ids),
			Timestamp: demoTime(height), Bits: chaincfg.RegressionNetParams.PowLimitBits}, Transactions: all}
		mine(&msg.Header)
		var raw bytes.Buffer
		if err := msg.Serialize(&raw); err != nil {
			t.Fatal(err)
		}
		file.Write(binary.LittleEndian.AppendUint32(nil, uint32(wire.TestNet)))
		file.Write(binary.LittleEndian.AppendUint32(nil, uint32(raw.Len())))
		file.Write(raw.Bytes())
		prev = msg.Header.BlockHash()
		if height == 1 {
			coin = wire.OutPoint{Hash: ids[0]}
		}
	}
	// The chain starts at regtest's genesis block, the only block 0 a
	// regtest store takes; the coin spent is block 1's coinbase.
	genesis := regtestGenesis()
	file.Write(binary.LittleEndian.AppendUint32(nil, uint32(wire.TestNet)))
	file.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(genesis.Raw))))
	file.Write(genesis.Raw)
	prev = genesis.Hash
	height := uint32(1)
	for ; height <= 101; height++ {
		write(height, nil)
	}
	for done := 0; done < txs; height++ {
		var body []*wire.MsgTx
		for ; len(body) < perBlock && done < txs; done++ {
			tx := wire.NewMsgTx(1)
			tx.AddTxIn(&wire.TxIn{PreviousOutPoint: coin, SignatureScript: []byte{0x51}, Sequence: wire.MaxTxInSequenceNum})
			value -= 1000
			tx.AddTxOut(wire.NewTxOut(1000, script))
			tx.AddTxOut(wire.NewTxOut(value, change))
			coin = wire.OutPoint{Hash: tx.TxHash(), Index: 1}
			body = append(body, tx)
			history = append(history, histItem{TxHash: tx.TxHash().String(), Height: int64(height)})
		}
		write(height, body)
	}
	path = filepath.Join(t.TempDir(), "blk00000.dat")
	writeFile(t, path, file.String())
	return path, script, history
}

type histItem struct {
	TxHash string `json:"tx_hash"`
	Height int64  `json:"height"`
}

// TestElectrumBusyScript: a script paid by 100,000 transactions. Its
// whole history is over --electrum-max-history and refused with an error
// naming the flag; protocol 1.5 reads its first blocks by height range
// within the limit; its balance and its status hash (computed here from
// the blocks as written) answer.
func TestElectrumBusyScript(t *testing.T) {
	const txs, perBlock = 100_000, 2_000
	blk, script, history := busyChain(t, txs, perBlock)
	d := startDaemon(t, "serve", "--create", "--engine", "memory", "--index", "--network", "regtest", "--data", t.TempDir(),
		"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--electrum", "127.0.0.1:0")
	if _, stderr, err := run(t, "client", "--server", d.grpc, "--quiet", "import", blk); err != nil {
		t.Fatalf("client import: %v\n%s", err, stderr)
	}
	sh := scriptHash(script)

	old := dialElectrum(t, electrumAddrOf(t, d))
	old.result(new([]string), "server.version", "test", "1.4")
	a := old.call("blockchain.scripthash.get_history", sh)
	if a.Error == nil || !bytes.Contains([]byte(a.Error.Message), []byte("--electrum-max-history")) {
		t.Errorf("the whole history of %d transactions: want an error naming --electrum-max-history, got %+v %.200s", txs, a.Error, a.Result)
	}

	c := dialElectrum(t, electrumAddrOf(t, d))
	c.result(new([]string), "server.version", "test", []string{"1.4", "1.5"})
	first := history[0].Height
	var page []histItem
	c.result(&page, "blockchain.scripthash.get_history", sh, 0, first+5)
	if len(page) != 5*perBlock {
		t.Fatalf("the first 5 blocks of the history: %d entries, want %d", len(page), 5*perBlock)
	}
	for i := range page {
		if page[i] != history[i] {
			t.Fatalf("history entry %d: %+v, want %+v", i, page[i], history[i])
		}
	}
	var balance struct{ Confirmed, Unconfirmed int64 }
	c.result(&balance, "blockchain.scripthash.get_balance", sh)
	if balance.Confirmed != txs*1000 || balance.Unconfirmed != 0 {
		t.Errorf("balance %+v, want %d confirmed", balance, txs*1000)
	}
	h := sha256.New()
	for _, e := range history {
		fmt.Fprintf(h, "%s:%d:", e.TxHash, e.Height)
	}
	var status string
	c.result(&status, "blockchain.scripthash.subscribe", sh)
	if want := hex.EncodeToString(h.Sum(nil)); status != want {
		t.Errorf("status %s, want %s", status, want)
	}
}
