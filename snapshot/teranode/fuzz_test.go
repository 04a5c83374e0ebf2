package teranode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/snapshot"
)

// These targets read files from elsewhere: whatever a file holds, a
// reader refuses it with a *snapshot.FileError or reads it, and never
// crashes or takes more memory than the file's bytes.

// wantFileError fails t unless err is nil, io.EOF or a *snapshot.FileError.
func wantFileError(t *testing.T, err error) {
	t.Helper()
	var fe *snapshot.FileError
	if err != nil && !errors.Is(err, io.EOF) && !errors.As(err, &fe) {
		t.Fatalf("refused with %T, not a *snapshot.FileError: %v", err, err)
	}
}

// FuzzSetReader: a set the reader reads, the writer writes again and the
// reader reads back the same, with the same counts.
func FuzzSetReader(f *testing.F) {
	f.Add(writeSet(f, testTxs()[:5]))
	f.Add(writeSet(f, nil))
	f.Fuzz(func(t *testing.T, file []byte) {
		txs, r, err := readSet(file)
		if err != nil {
			wantFileError(t, err)
			return
		}
		var again bytes.Buffer
		w, err := NewSetWriter(&again, r.Header())
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range txs {
			if err := w.WriteTx(tx); err != nil {
				t.Fatalf("the writer refuses what the reader read: %v", err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		txs2, r2, err := readSet(again.Bytes())
		if err != nil {
			t.Fatalf("the file written again is refused: %v", err)
		}
		if r2.Header() != r.Header() || !slices.EqualFunc(txs, txs2, func(a, b []coinstats.Coin) bool {
			return slices.EqualFunc(a, b, coinstats.Coin.Equal)
		}) {
			t.Fatalf("read back differently:\n%+v\n%+v", txs, txs2)
		}
	})
}

// diffSeed is a diff file's header for a block at height 7, then body.
func diffSeed(magic, body []byte) []byte {
	b := append(bytes.Clone(magic), bytes.Repeat([]byte{3}, chainhash.HashSize)...)
	return append(binary.LittleEndian.AppendUint32(b, 7), body...)
}

// FuzzAdditionsReader reads additions files to their end.
func FuzzAdditionsReader(f *testing.F) {
	wrapper, err := appendWrapper(nil, []coinstats.Coin{
		{Outpoint: coinstats.Outpoint{TxID: chainhash.Hash{5}, Vout: 0}, Height: 7, Value: 50, Script: []byte{0x51}},
		{Outpoint: coinstats.Outpoint{TxID: chainhash.Hash{5}, Vout: 3}, Height: 7, Value: 1, Script: nil},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(diffSeed(magicAdditions, wrapper))
	f.Add(diffSeed(magicAdditions, nil))
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := NewAdditionsReader(bytes.NewReader(file))
		for err == nil {
			_, _, err = r.Next()
		}
		wantFileError(t, err)
	})
}

// FuzzDeletionsReader reads deletions files to their end.
func FuzzDeletionsReader(f *testing.F) {
	f.Add(diffSeed(magicDeletions, append(bytes.Repeat([]byte{9}, chainhash.HashSize), 1, 0, 0, 0)))
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := NewDeletionsReader(bytes.NewReader(file))
		for err == nil {
			_, err = r.Next()
		}
		wantFileError(t, err)
	})
}

// FuzzHeadersReader reads headers files, for mainnet, to their end.
func FuzzHeadersReader(f *testing.F) {
	genesis := chaincfg.MainNetParams.GenesisBlock
	var buf bytes.Buffer
	w, err := NewHeadersWriter(&buf, *chaincfg.MainNetParams.GenesisHash, 0)
	if err == nil {
		err = w.Write(&BlockIndex{Hash: *chaincfg.MainNetParams.GenesisHash, TxCount: 1, Header: genesis.Header})
	}
	if err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := NewHeadersReader(bytes.NewReader(file), "mainnet")
		for err == nil {
			_, err = r.Next()
		}
		wantFileError(t, err)
	})
}
