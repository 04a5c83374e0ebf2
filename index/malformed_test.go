package index

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
)

// Each column's value is overwritten with garbage; the reads that decode
// it fail with a CorruptError naming the column, never a panic.
func TestMalformedValues(t *testing.T) {
	A := hashOf(0xa1)
	cases := []struct {
		col  column
		key  []byte // without prefix
		val  string
		read func(ix *Index) error
	}{
		{cfHeight, packUint32(1), "00", func(ix *Index) error { _, _, err := ix.BlockInfo(1); return err }},
		{cfHeight, packUint32(1), packedHex(0xb1) + "4966bc61" + "02" + "ff", func(ix *Index) error { _, _, err := ix.BlockInfo(1); return err }},
		{cfAddresses, addressKey(s1, 1)[1:], packedHex(0xd1) + "0c", func(ix *Index) error { _, err := ix.History(context.Background(), s1, 1, 10, 0, 0); return err }},
		{cfAddresses, addressKey(s1, 1)[1:], "d1d1", func(ix *Index) error { _, err := ix.History(context.Background(), s1, 1, 10, 0, 0); return err }},
		{cfAddressBalance, s2, "02", func(ix *Index) error { _, err := ix.Balance(s2); return err }},
		{cfAddressBalance, s2, "0200" + "09" + "010203040506070809", func(ix *Index) error { _, err := ix.Balance(s2); return err }},
		{cfAddressBalance, s2, "020000" + packedHex(1), func(ix *Index) error { _, err := ix.Balance(s2); return err }},
		{cfTxAddresses, packedHash(&A), "00ff7f", func(ix *Index) error { _, _, err := ix.TxAddresses(A); return err }},
		{cfTxAddresses, packedHash(&A), "0001" + "05" + "00", func(ix *Index) error { _, _, err := ix.TxAddresses(A); return err }},
		{cfBlockTxs, packUint32(1), packedHex(0xc1) + "05", func(ix *Index) error { return ix.DisconnectBlock(1, hashOf(0xb1)) }},
		// A corrupt txAddresses value is found by a connect that spends it.
		{cfTxAddresses, packedHash(&A), "00", func(ix *Index) error {
			return ix.ConnectBlock(&Block{Height: 2, Txs: []Tx{{ID: hashOf(0xe1), Inputs: []Outpoint{{TxID: A, Vout: 1}}}}})
		}},
		{cfDefault, []byte("internalState"), "7b", nil},
	}
	for i, c := range cases {
		dir := t.TempDir()
		ix := openTest(t, dir, Options{})
		connectAll(t, ix, goldenChain())
		ix.Close()
		db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set(c.col.key(c.key), unhex(t, c.val), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if c.read == nil {
			_, err = Open(dir, Options{Coin: "Bitcoin"})
		} else if ix, err = Open(dir, Options{Coin: "Bitcoin"}); err == nil {
			// Open itself decodes the tip's height value.
			err = c.read(ix)
			ix.Close()
		}
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Column != c.col.String() || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "column "+c.col.String()) {
			t.Errorf("case %d (%s): got %v", i, c.col, err)
		}
	}
}
