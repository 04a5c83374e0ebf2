package btcdtest

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
	"github.com/gcash/bchd/bchec"
	bchcfg "github.com/gcash/bchd/chaincfg"
	bchscript "github.com/gcash/bchd/txscript"
	bchwire "github.com/gcash/bchd/wire"
	"github.com/gcash/bchutil"
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
	kind  *Kind
	coins []Coin
	// miningAddr is the key's address as the node takes it: bchd's in its
	// cashaddr form.
	miningAddr string
}

// NewWallet makes a wallet of a btcd node (Btcd.NewWallet).
func NewWallet(t testing.TB, seed string) *Wallet { return Btcd.NewWallet(t, seed) }

// NewWallet makes a wallet for the node whose key derives from seed
// (tests are deterministic).
func (k *Kind) NewWallet(t testing.TB, seed string) *Wallet {
	t.Helper()
	secret := sha256.Sum256([]byte(seed))
	priv, _ := btcec.PrivKeyFromBytes(secret[:])
	hash := btcutil.Hash160(priv.PubKey().SerializeCompressed())
	addr, err := btcutil.NewAddressPubKeyHash(hash, k.Params)
	if err != nil {
		t.Fatal(err)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	w := &Wallet{Key: Key{Priv: priv, Addr: addr, PkScript: script}, kind: k, miningAddr: addr.EncodeAddress()}
	if k.forkID {
		cash, err := bchutil.NewAddressPubKeyHash(hash, &bchcfg.RegressionNetParams)
		if err != nil {
			t.Fatal(err)
		}
		w.miningAddr = cash.EncodeAddress()
	}
	return w
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
		mature := !c.Coinbase || tip+1-c.Height >= int32(w.kind.Params.CoinbaseMaturity)
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
		tx.TxIn[i].SignatureScript = w.sign(t, tx, i, coins[i].Value)
	}
	return tx
}

// sign signs input i, spending value, of tx: as btcd checks it, or, for
// a Bitcoin Cash node, with bchd's own signing code, committing to the
// value (SIGHASH_ALL|SIGHASH_FORKID).
func (w *Wallet) sign(t testing.TB, tx *wire.MsgTx, i int, value int64) []byte {
	t.Helper()
	if !w.kind.forkID {
		sig, err := txscript.SignatureScript(tx, i, w.PkScript, txscript.SigHashAll, w.Priv, true)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	var raw bytes.Buffer
	if err := tx.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	cashTx := bchwire.NewMsgTx(0)
	if err := cashTx.Deserialize(&raw); err != nil {
		t.Fatal(err)
	}
	priv, _ := bchec.PrivKeyFromBytes(bchec.S256(), w.Priv.Serialize())
	sig, err := bchscript.SignatureScript(cashTx, i, value, w.PkScript, bchscript.SigHashAll|bchscript.SigHashForkID, priv, true)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}
