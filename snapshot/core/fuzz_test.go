package core

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/snapshot"
)

// readTxs reads every transaction of file.
func readTxs(file []byte) (Header, [][]coinstats.Coin, error) {
	r, err := NewReader(bytes.NewReader(file), "mainnet")
	if err != nil {
		return Header{}, nil, err
	}
	var txs [][]coinstats.Coin
	for {
		coins, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Header(), txs, nil
		}
		if err != nil {
			return Header{}, nil, err
		}
		txs = append(txs, coins)
	}
}

// FuzzReader: whatever a file holds, the reader refuses it with a
// *snapshot.FileError or reads coins that the writer writes again and the
// reader reads back the same. A snapshot is a file from elsewhere: a
// damaged one must be named, never crash or exhaust the loader.
func FuzzReader(f *testing.F) {
	f.Add(writeTestFile(f, testCoins(f)[:4]))
	f.Add(writeTestFile(f, nil))
	f.Fuzz(func(t *testing.T, file []byte) {
		h, txs, err := readTxs(file)
		if err != nil {
			if fe := (*snapshot.FileError)(nil); !errors.As(err, &fe) {
				t.Fatalf("refused with %T, not a *snapshot.FileError: %v", err, err)
			}
			return
		}
		var again bytes.Buffer
		w, err := NewWriter(&again, h)
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
		h2, txs2, err := readTxs(again.Bytes())
		if err != nil {
			t.Fatalf("the file written again is refused: %v", err)
		}
		if h2 != h || !slices.EqualFunc(txs, txs2, func(a, b []coinstats.Coin) bool {
			return slices.EqualFunc(a, b, coinstats.Coin.Equal)
		}) {
			t.Fatalf("read back differently:\n%+v\n%+v", txs, txs2)
		}
	})
}
