package chain

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/internal/testdata"
)

// countFile reads every block of a file with OpenBlockFile.
func countFile(t *testing.T, path string) (format Format, blocks, txs int) {
	t.Helper()
	bf, err := OpenBlockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	for {
		br, err := bf.Next()
		if err == io.EOF {
			return bf.Format(), blocks, txs
		}
		if err != nil {
			t.Fatal(err)
		}
		blocks++
		txs += int(br.Remaining())
	}
}

func TestOpenBlockFileDetectsFormat(t *testing.T) {
	format, blocks, txs := countFile(t, testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if format != FormatFramed || blocks != btcBlocks || txs != btcTxs {
		t.Errorf("btc file: %s, %d blocks, %d txs", format, blocks, txs)
	}
	counts := map[string]int{}
	for name, path := range bsvBlockFiles(t) {
		format, blocks, txs := countFile(t, path)
		if format != FormatRawBlock || blocks != 1 {
			t.Errorf("%s: %s, %d blocks", name, format, blocks)
		}
		counts[name] = txs
	}
	if got := sortedInts(counts); len(got) != len(bsvTxCounts) || got[0] != bsvTxCounts[0] {
		t.Errorf("raw block tx counts %v", got)
	}
}

func TestOpenBlockFileErrors(t *testing.T) {
	dir := t.TempDir()
	tiny := filepath.Join(dir, "tiny")
	if err := os.WriteFile(tiny, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBlockFile(tiny); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("tiny file: %v", err)
	}

	var block []byte
	for _, p := range bsvBlockFiles(t) {
		block = readFile(t, p)
		break
	}
	trailing := filepath.Join(dir, "trailing.bin")
	if err := os.WriteFile(trailing, append(block, 0), 0o600); err != nil {
		t.Fatal(err)
	}
	bf, err := OpenBlockFile(trailing)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	if _, err := bf.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := bf.Next(); !errors.Is(err, ErrTrailingBytes) {
		t.Errorf("raw block with a trailing byte: %v", err)
	}
}
