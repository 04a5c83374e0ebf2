package index

import (
	"bytes"
	"reflect"
	"testing"
)

// The fuzz targets feed arbitrary bytes to each value decoder: it must
// return an error or a value that re-encodes to bytes that decode to the
// same value (the encoding is canonical, a stored value may not be).

func FuzzBlockInfo(f *testing.F) {
	f.Add(unhex(f, packedHex(0xb0)+"495fab2901822c"))
	f.Fuzz(func(t *testing.T, val []byte) {
		bi, err := unpackBlockInfo(packUint32(7), val)
		if err != nil {
			return
		}
		again, err := unpackBlockInfo(packUint32(7), packBlockInfo(&bi))
		if err != nil || again != bi {
			t.Fatalf("round trip %+v -> %+v, %v", bi, again, err)
		}
	})
}

func FuzzTxIndexes(f *testing.F) {
	f.Add(unhex(f, packedHex(0xd1)+"0c01"))
	key := addressKey(s1, 1)[1:]
	f.Fuzz(func(t *testing.T, val []byte) {
		txs, err := unpackTxIndexes(key, val)
		if err != nil {
			return
		}
		// Stored newest first; pack expects order of appearance.
		rev := make([]txIndexes, len(txs))
		for i := range txs {
			rev[len(txs)-1-i] = txs[i]
		}
		again, err := unpackTxIndexes(key, packTxIndexes(rev))
		if err != nil || !reflect.DeepEqual(again, txs) {
			t.Fatalf("round trip %+v -> %+v, %v", txs, again, err)
		}
	})
}

func FuzzAddrBalance(f *testing.F) {
	f.Add(unhex(f, "02"+"05012a05f200"+"05012a05de78"+packedHex(0xd1)+"0301"+"05012a05de78"))
	f.Fuzz(func(t *testing.T, val []byte) {
		ab, err := unpackAddrBalance(s1, val)
		if err != nil {
			return
		}
		again, err := unpackAddrBalance(s1, packAddrBalance(ab))
		if err != nil || again.txs != ab.txs || again.sent != ab.sent || again.balance != ab.balance || len(again.utxos) != len(ab.utxos) {
			t.Fatalf("round trip %+v -> %+v, %v", ab, again, err)
		}
		for i := range ab.utxos {
			if again.utxos[i] != ab.utxos[i] {
				t.Fatalf("utxo %d: %+v -> %+v", i, ab.utxos[i], again.utxos[i])
			}
		}
	})
}

func FuzzTxAddresses(f *testing.F) {
	f.Add(unhex(f, "0101020101"+"05012a05f200"+"04"+"040202020bb8"+"066a01ff00"))
	f.Fuzz(func(t *testing.T, val []byte) {
		ta, err := unpackTxAddresses(packedHex0(), val)
		if err != nil {
			return
		}
		again, err := unpackTxAddresses(packedHex0(), packTxAddresses(ta))
		if err != nil || again.height != ta.height || len(again.inputs) != len(ta.inputs) || len(again.outputs) != len(ta.outputs) {
			t.Fatalf("round trip %+v -> %+v, %v", ta, again, err)
		}
		for i := range ta.outputs {
			a, b := ta.outputs[i], again.outputs[i]
			if a.spent != b.spent || a.value != b.value || !bytes.Equal(a.addrDesc, b.addrDesc) {
				t.Fatalf("output %d: %+v -> %+v", i, a, b)
			}
		}
	})
}

func FuzzBlockTxs(f *testing.F) {
	f.Add(unhex(f, packedHex(0xc1)+"01"+packedHex(0)+"00"))
	f.Fuzz(func(t *testing.T, val []byte) {
		txs, err := unpackBlockTxs(packUint32(1), val)
		if err != nil {
			return
		}
		again, err := unpackBlockTxs(packUint32(1), packBlockTxs(txs))
		if err != nil || !reflect.DeepEqual(again, txs) {
			t.Fatalf("round trip %+v -> %+v, %v", txs, again, err)
		}
	})
}

func packedHex0() []byte { return make([]byte, 32) }
