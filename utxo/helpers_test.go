package utxo

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/internal/testdata"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

var ctx = context.Background()

// engineOpener opens a fresh engine for one test; TestStoreOnEveryEngine
// passes one per persistent engine.
type engineOpener func(testing.TB) engine.Engine

// onMemory is the engine most tests run on.
func onMemory(testing.TB) engine.Engine { return memory.New() }

// newStore opens a store on a fresh memory engine with a file blob store.
func newStore(t testing.TB, opts Options) *DB {
	t.Helper()
	return newStoreOn(t, onMemory, opts)
}

// newStoreOn opens a store on a fresh engine from open with a file blob
// store.
func newStoreOn(t testing.TB, open engineOpener, opts Options) *DB {
	t.Helper()
	if opts.Blobs == nil {
		bs, err := blob.NewFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		opts.Blobs = bs
	}
	db, err := Open(ctx, open(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, errClosedForTest) {
			t.Logf("close: %v", err)
		}
	})
	return db
}

var errClosedForTest = errors.New("closed")

// script returns a distinct locking script for label.
func script(label string) []byte {
	h := sha256.Sum256([]byte(label))
	return append([]byte{0x76, 0xa9, 0x14}, append(h[:20], 0x88, 0xac)...)
}

// coinbaseTx builds a coinbase paying value to n outputs; tag makes it
// unique.
func coinbaseTx(tag string, n int, value int64) *chain.Tx {
	msg := wire.NewMsgTx(1)
	msg.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 0xffffffff}, SignatureScript: []byte(tag), Sequence: 0xffffffff})
	for i := 0; i < n; i++ {
		msg.AddTxOut(&wire.TxOut{Value: value, PkScript: script(fmt.Sprintf("%s/%d", tag, i))})
	}
	return chain.NewTx(msg)
}

// spendTx builds a transaction spending the given outpoints into n outputs
// of value each.
func spendTx(tag string, from []wire.OutPoint, n int, value int64) *chain.Tx {
	msg := wire.NewMsgTx(1)
	for _, op := range from {
		msg.AddTxIn(&wire.TxIn{PreviousOutPoint: op, SignatureScript: []byte(tag), Sequence: 0xffffffff})
	}
	for i := 0; i < n; i++ {
		msg.AddTxOut(&wire.TxOut{Value: value, PkScript: script(fmt.Sprintf("%s/%d", tag, i))})
	}
	return chain.NewTx(msg)
}

func out(tx *chain.Tx, vout uint32) wire.OutPoint {
	return wire.OutPoint{Hash: tx.ID, Index: vout}
}

// mustCreate stores tx at height with opts (mined: see mined).
func mustCreate(t testing.TB, db *DB, tx *chain.Tx, height uint32, opts ...CreateOption) {
	t.Helper()
	if _, err := db.Create(ctx, tx, height, opts...); err != nil {
		t.Fatalf("create %s: %v", tx.ID, err)
	}
}

// mined is the option of a transaction mined at height on the longest
// chain, in block id height+1.
func mined(height uint32) CreateOption {
	return WithMinedBlockInfo(model.MinedBlockInfo{BlockID: height + 1, BlockHeight: height, OnLongestChain: true})
}

// mustGet returns the transaction's metadata.
func mustGet(t testing.TB, db *DB, txid chainhash.Hash) *Meta {
	t.Helper()
	m, err := db.Get(ctx, txid)
	if err != nil {
		t.Fatalf("get %s: %v", txid, err)
	}
	return m
}

// wantCode fails unless err carries code.
func wantCode(t testing.TB, err error, want *model.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %s", err, want.Code)
	}
}

// referenceUTXOs computes, independently of the store, the summary of the
// UTXO set after the blocks in path: a map of outpoints, outputs added and
// inputs removed, in chain order, the genesis coinbase included.
func referenceUTXOs(t testing.TB, path string) Summary {
	t.Helper()
	type outpoint struct {
		txid chainhash.Hash
		vout uint32
	}
	type coin struct {
		out      *wire.TxOut
		height   uint32
		coinbase bool
	}
	set := map[outpoint]coin{}
	var sum Summary
	for height, raw := range readFramedBlocks(t, path) {
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytesReader(raw)); err != nil {
			t.Fatal(err)
		}
		sum.Blocks++
		for i, tx := range blk.Transactions {
			sum.Txs++
			if i > 0 {
				for _, in := range tx.TxIn {
					delete(set, outpoint{in.PreviousOutPoint.Hash, in.PreviousOutPoint.Index})
				}
			}
			id := tx.TxHash()
			for vout, o := range tx.TxOut {
				set[outpoint{id, uint32(vout)}] = coin{o, uint32(height), i == 0}
			}
		}
	}
	sum.Height = uint32(sum.Blocks - 1)
	ops := make([]outpoint, 0, len(set))
	var core coinstats.Stats // Core's statistics of the same set
	for op, c := range set {
		ops = append(ops, op)
		sum.Satoshis += uint64(c.out.Value)
		core.Add(&coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: op.txid, Vout: op.vout}, Height: c.height, Coinbase: c.coinbase,
			Value: uint64(c.out.Value), Script: c.out.PkScript})
	}
	stats := core.Finalize()
	sum.TxOuts, sum.TotalAmount, sum.MuHash = stats.TxOuts, stats.TotalAmount, stats.MuHash
	sort.Slice(ops, func(i, j int) bool {
		if a, b := ops[i].txid.String(), ops[j].txid.String(); a != b {
			return a < b
		}
		return ops[i].vout < ops[j].vout
	})
	h := sha256.New()
	for _, op := range ops {
		fmt.Fprintf(h, "%s:%d:%d\n", op.txid, op.vout, set[op].out.Value)
	}
	sum.Utxos = uint64(len(set))
	sum.Digest = hex.EncodeToString(h.Sum(nil))
	return sum
}

// readFramedBlocks reads a blk*.dat file with its own minimal framing
// reader, so the test does not depend on package chain's.
func readFramedBlocks(t testing.TB, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(testdata.Path(t, path))
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]byte
	for len(data) >= 8 {
		if binary.LittleEndian.Uint32(data) == 0 {
			break
		}
		n := binary.LittleEndian.Uint32(data[4:])
		blocks = append(blocks, data[8:8+n])
		data = data[8+n:]
	}
	return blocks
}

type sliceReader struct {
	b []byte
}

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func bytesReader(b []byte) io.Reader { return &sliceReader{b} }

// chainBlocks parses a blk*.dat file into blocks at heights 0...
func chainBlocks(t testing.TB, path string) []Block {
	t.Helper()
	var blocks []Block
	for h, raw := range readFramedBlocks(t, path) {
		b, err := chain.ParseBlock(raw)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, BlockFromChain(b, uint32(h)))
	}
	return blocks
}

func connectAll(t testing.TB, db *DB, blocks []Block) {
	t.Helper()
	for _, b := range blocks {
		if err := db.ConnectBlock(ctx, b); err != nil {
			t.Fatalf("connect %d: %v", b.Height, err)
		}
	}
}

func summary(t testing.TB, db *DB) Summary {
	t.Helper()
	s, err := db.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mustVerify fails unless the store is consistent.
func mustVerify(t testing.TB, db *DB) VerifyReport {
	t.Helper()
	rep, err := db.Verify(ctx)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return rep
}

// purgingAtOnce is a memory engine that cleans up by itself as early as
// engine.HeightAware lets an engine: at SetHeight(h) it hard-deletes every
// record whose delete-at-height is h or below and that nothing preserves
// beyond h, where Sozu's purge loop may take them at any write after it.
type purgingAtOnce struct{ *memory.Engine }

func onPurgingAtOnce(testing.TB) engine.Engine { return purgingAtOnce{memory.New()} }

func (e purgingAtOnce) SetHeight(ctx context.Context, h uint32) error {
	var updates []engine.Update
	err := e.Scan(ctx, engine.ByDeleteAtHeight, 1, h, func(k engine.Key, _ uint32) error {
		updates = append(updates, engine.Update{Key: k, Fn: func(current []byte) (engine.Mutation, error) {
			r, err := record.Decode(current)
			if err != nil || r.PreserveUntil > h {
				return engine.Mutation{Action: engine.Keep}, nil
			}
			return engine.Mutation{Action: engine.Remove}, nil
		}})
		return nil
	})
	if err != nil {
		return err
	}
	errs, err := e.Update(ctx, updates)
	return errors.Join(append(errs, err)...)
}
