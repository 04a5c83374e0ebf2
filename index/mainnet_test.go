package index

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"testing"

	"github.com/btcsuite/btcd/wire"
	"github.com/cockroachdb/pebble"

	"github.com/utxostore/utxostore/internal/testdata"
)

// readBlk reads Bitcoin Core blk*.dat framing: magic f9beb4d9, 4-byte
// little-endian length, block. Zero padding after the last block ends it.
func readBlk(t testing.TB, path string) []*wire.MsgBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var blocks []*wire.MsgBlock
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if binary.LittleEndian.Uint32(hdr[:4]) == 0 {
			break
		}
		if !bytes.Equal(hdr[:4], []byte{0xf9, 0xbe, 0xb4, 0xd9}) {
			t.Fatalf("bad magic %x after %d blocks", hdr[:4], len(blocks))
		}
		raw := make([]byte, binary.LittleEndian.Uint32(hdr[4:]))
		if _, err := io.ReadFull(r, raw); err != nil {
			t.Fatal(err)
		}
		var mb wire.MsgBlock
		if err := mb.Deserialize(bytes.NewReader(raw)); err != nil {
			t.Fatalf("block %d: %v", len(blocks), err)
		}
		blocks = append(blocks, &mb)
	}
	return blocks
}

func mainnetChain(t testing.TB) []*Block {
	t.Helper()
	blocks := readBlk(t, testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if len(blocks) != 14132 {
		t.Fatalf("read %d blocks, want 14132", len(blocks))
	}
	chain := make([]*Block, len(blocks))
	for h, mb := range blocks {
		chain[h] = FromWireBlock(mb, uint32(h))
	}
	return chain
}

// The genesis coinbase is indexed, as Blockbook does, so the index's
// UTXO set is the one that counts it: 13,417 outputs, 70,660,000,000,000
// sat. Bitcoin Core, which cannot spend it, reports 13,416 outputs and
// 5,000,000,000 sat less; the difference is exactly the genesis output,
// which the test checks too.
func TestMainnetBalancesMatchUTXOSet(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 14,132 blocks")
	}
	chain := mainnetChain(t)

	set := utxoSetOf(chain)
	var total uint64
	for _, o := range set {
		total += o.Value
	}
	if len(set) != 13417 || total != 70_660_000_000_000 {
		t.Fatalf("UTXO set from blocks: %d outputs, %d sat", len(set), total)
	}

	ix := bulkIndexed(t, chain)
	defer ix.Close()

	lo, hi := cfAddressBalance.bounds()
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	seen := map[outpoint]bool{}
	var sumBalances, sumUtxos uint64
	for it.First(); it.Valid(); it.Next() {
		addrDesc := it.Key()[1:]
		ab, err := unpackAddrBalance(addrDesc, it.Value())
		if err != nil {
			t.Fatal(err)
		}
		var own uint64
		for _, u := range ab.utxos {
			k := outpoint{u.txid, uint32(u.vout)}
			if seen[k] {
				t.Fatalf("utxo %s:%d under two address descriptors", u.txid, u.vout)
			}
			seen[k] = true
			o, ok := set[k]
			if !ok || !bytes.Equal(AddrDesc(o.Script), addrDesc) || o.Value != u.value {
				t.Fatalf("utxo %s:%d under %x is not in the UTXO set with that script and value", u.txid, u.vout, addrDesc)
			}
			own += u.value
		}
		if own != ab.balance {
			t.Fatalf("address %x: balance %d, its utxos sum to %d", addrDesc, ab.balance, own)
		}
		sumBalances += ab.balance
		sumUtxos += own
	}
	if len(seen) != len(set) || sumBalances != total {
		t.Fatalf("index: %d utxos, %d sat in balances; UTXO set: %d outputs, %d sat", len(seen), sumBalances, len(set), total)
	}

	genesis := chain[0].Txs[0]
	bal, err := ix.Balance(AddrDesc(genesis.Outputs[0].Script))
	if err != nil {
		t.Fatal(err)
	}
	if bal.Txs != 1 || len(bal.UTXOs) != 1 || bal.UTXOs[0].TxID != genesis.ID || bal.UTXOs[0].Value != 5_000_000_000 {
		t.Fatalf("genesis output script balance %+v", bal)
	}
	t.Logf("reconciled: %d utxos, %d sat (%d and %d without the genesis coinbase)", len(seen), sumBalances, len(seen)-1, sumBalances-5_000_000_000)
}

// On the real chain, bulk import equals block-by-block connect, and the
// last blocks disconnect back to the exact earlier bytes.
func TestMainnetBulkEqualsConnectAndRollback(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 14,132 blocks twice")
	}
	chain := mainnetChain(t)
	const back = 15

	ix := openTest(t, t.TempDir(), Options{NoSync: true})
	defer ix.Close()
	var before []map[column]snapshot
	for _, b := range chain {
		if int(b.Height) >= len(chain)-back {
			before = append(before, dumpAll(t, ix))
		}
		if err := ix.ConnectBlock(b); err != nil {
			t.Fatal(err)
		}
	}
	normal := dumpAll(t, ix)

	bx := openTest(t, t.TempDir(), Options{NoSync: true})
	defer bx.Close()
	if err := connectBulk(t, bx, 3000, chain).Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffColumns(normal, dumpAll(t, bx)); d != "" {
		t.Fatalf("bulk differs from block-by-block:\n%s", d)
	}
	// The Electrum columns too: the early chain spends many pay-to-pubkey
	// outputs, some across the bulk import's flushes.
	for _, c := range []column{cfScripts, cfP2PK} {
		if want, got := dump(t, ix, c), dump(t, bx, c); !maps.Equal(want, got) {
			t.Fatalf("column %#x: bulk holds %d entries, block-by-block %d, and they differ", byte(c), len(got), len(want))
		}
	}
	inputMarks := 0
	for k := range dump(t, ix, cfP2PK) {
		if k[64:66] == "01" { // txid, then the direction: 1 an input
			inputMarks++
		}
	}
	if inputMarks == 0 {
		t.Fatal("no input of the early chain is marked as spending a pay-to-pubkey output")
	}
	t.Logf("%d inputs spend pay-to-pubkey outputs", inputMarks)

	for i := back - 1; i >= 0; i-- {
		b := chain[len(chain)-back+i]
		if err := ix.DisconnectBlock(b.Height, b.Hash); err != nil {
			t.Fatal(err)
		}
		// Connects from this block on pruned blockTxs below the window.
		want := before[i]
		for h := b.Height - DefaultRollbackBlocks; h < uint32(len(chain)-DefaultRollbackBlocks); h++ {
			delete(want[cfBlockTxs], fmt.Sprintf("%08x", h))
		}
		if d := diffColumns(want, dumpAll(t, ix)); d != "" {
			t.Fatalf("after disconnecting %d:\n%s", b.Height, d)
		}
	}
}
