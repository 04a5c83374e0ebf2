package btcdtest

import (
	"crypto/sha256"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
)

// Coin is an output the wallet can spend.
type Coin struct {
	OutPoint wire.OutPoint
	Value    int64
	// Height is the block that holds it; a coinbase output is mature 100
	// blocks later.
	Height   int32
	Coinbase bool
}

// Wallet holds one key and the coins paid to it in the blocks it was shown.
type Wallet struct {
	Key
	coins []Coin
}

// NewWallet makes a wallet whose key derives from seed (tests are
// deterministic).
func NewWallet(t testing.TB, seed string) *Wallet {
	t.Helper()
	secret := sha256.Sum256([]byte(seed))
	priv, _ := btcec.PrivKeyFromBytes(secret[:])
	addr, err := btcutil.NewAddressPubKeyHash(btcutil.Hash160(priv.PubKey().SerializeCompressed()), Params)
	if err != nil {
		t.Fatal(err)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	return &Wallet{Key: Key{Priv: priv, Addr: addr, PkScript: script}}
}

// AddBlock takes the block's outputs paid to the wallet as coins, and
// drops the coins it spends.
func (w *Wallet) AddBlock(b *wire.MsgBlock, height int32) {
	spent := map[wire.OutPoint]bool{}
	for i, tx := range b.Transactions {
		for _, in := range tx.TxIn {
			spent[in.PreviousOutPoint] = true
		}
		txid := tx.TxHash()
		for vout, out := range tx.TxOut {
			if string(out.PkScript) == string(w.PkScript) {
				w.coins = append(w.coins, Coin{OutPoint: wire.OutPoint{Hash: txid, Index: uint32(vout)}, Value: out.Value, Height: height, Coinbase: i == 0})
			}
		}
	}
	kept := w.coins[:0]
	for _, c := range w.coins {
		if !spent[c.OutPoint] {
			kept = append(kept, c)
		}
	}
	w.coins = kept
}

// Take removes and returns up to n coins spendable in the block after
// tip, oldest first.
func (w *Wallet) Take(tip int32, n int) []Coin {
	var taken []Coin
	kept := w.coins[:0]
	for _, c := range w.coins {
		mature := !c.Coinbase || tip+1-c.Height >= int32(Params.CoinbaseMaturity)
		if len(taken) < n && mature {
			taken = append(taken, c)
			continue
		}
		kept = append(kept, c)
	}
	w.coins = kept
	return taken
}

// Pay spends the coins into outputs equal outputs to the wallet's own
// key, leaving fee, and signs every input.
func (w *Wallet) Pay(t testing.TB, coins []Coin, outputs int, fee int64) *wire.MsgTx {
	t.Helper()
	tx := wire.NewMsgTx(wire.TxVersion)
	var total int64
	for _, c := range coins {
		tx.AddTxIn(wire.NewTxIn(&c.OutPoint, nil, nil))
		total += c.Value
	}
	each := (total - fee) / int64(outputs)
	for range outputs {
		tx.AddTxOut(wire.NewTxOut(each, w.PkScript))
	}
	for i := range tx.TxIn {
		sig, err := txscript.SignatureScript(tx, i, w.PkScript, txscript.SigHashAll, w.Priv, true)
		if err != nil {
			t.Fatal(err)
		}
		tx.TxIn[i].SignatureScript = sig
	}
	return tx
}
