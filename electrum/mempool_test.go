package electrum

import (
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// A view's fee histogram is made once and shared: making it sorts the
// whole mempool, which a client asking again and again must not make the
// server do at each request while the mempool stays as it is.
func TestAViewsFeeHistogramIsMadeOnce(t *testing.T) {
	v := &mempoolView{txs: map[chainhash.Hash]*mempoolTx{}}
	for i := range 300 {
		txid := chainhash.Hash{byte(i), byte(i >> 8)}
		v.txs[txid] = &mempoolTx{txid: txid, fee: uint64(1000 + 37*i), vsize: uint64(150 + i%90)}
	}
	first := v.feeHistogram()
	if len(first) == 0 {
		t.Fatal("no bins for 300 transactions")
	}
	var vsize float64
	for _, b := range first {
		vsize += b[1]
	}
	want := 0.0
	for _, tx := range v.txs {
		want += float64(tx.vsize)
	}
	if vsize != want {
		t.Fatalf("the bins hold %v vbytes, the transactions %v", vsize, want)
	}
	if again := v.feeHistogram(); &again[0] != &first[0] {
		t.Fatal("the second request made the histogram again")
	}
}
