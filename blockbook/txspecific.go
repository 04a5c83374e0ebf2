package blockbook

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
)

// specificTxJSON is the backend's own transaction JSON, which Blockbook's
// /api/v2/tx-specific passes through from bitcoind's getrawtransaction
// (verbose). The store is the backend here, so it renders the same fields.
type specificTxJSON struct {
	TxID          string             `json:"txid"`
	Hash          string             `json:"hash"`
	Version       int32              `json:"version"`
	Size          int                `json:"size"`
	VSize         int64              `json:"vsize"`
	Weight        int64              `json:"weight"`
	LockTime      uint32             `json:"locktime"`
	Vin           []specificVinJSON  `json:"vin"`
	Vout          []specificVoutJSON `json:"vout"`
	Hex           string             `json:"hex"`
	BlockHash     string             `json:"blockhash,omitempty"`
	Confirmations uint32             `json:"confirmations,omitempty"`
	Time          int64              `json:"time,omitempty"`
	BlockTime     int64              `json:"blocktime,omitempty"`
}

type specificVinJSON struct {
	Coinbase    string   `json:"coinbase,omitempty"`
	TxID        string   `json:"txid,omitempty"`
	Vout        *uint32  `json:"vout,omitempty"`
	ScriptSig   *asmHex  `json:"scriptSig,omitempty"`
	TxInWitness []string `json:"txinwitness,omitempty"`
	Sequence    uint32   `json:"sequence"`
}

type asmHex struct {
	Asm string `json:"asm"`
	Hex string `json:"hex"`
}

type specificVoutJSON struct {
	Value        json.Number `json:"value"`
	N            int         `json:"n"`
	ScriptPubKey struct {
		Asm       string   `json:"asm"`
		Hex       string   `json:"hex"`
		ReqSigs   int      `json:"reqSigs,omitempty"`
		Type      string   `json:"type"`
		Addresses []string `json:"addresses,omitempty"`
	} `json:"scriptPubKey"`
}

func (a *API) handleTxSpecific(w http.ResponseWriter, r *http.Request) {
	out, code, err := a.txSpecific(r.Context(), r.PathValue("txid"))
	writeOutcome(w, out, code, err)
}

func (a *API) txSpecific(ctx context.Context, param string) (*specificTxJSON, int, error) {
	txid, err := parseTxid(param)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	return a.specificTx(ctx, txid)
}

// VerboseTx is the transaction as bitcoind's getrawtransaction renders
// it verbose (what tx-specific answers); ok is false when no store holds
// it. The Electrum protocol's verbose blockchain.transaction.get is it.
func (a *API) VerboseTx(ctx context.Context, txid chainhash.Hash) (v any, ok bool, err error) {
	out, code, err := a.specificTx(ctx, txid)
	if code == http.StatusBadRequest {
		return nil, false, nil
	}
	return out, err == nil, err
}

func (a *API) specificTx(ctx context.Context, txid chainhash.Hash) (*specificTxJSON, int, error) {
	ft, ok, err := a.findTx(ctx, txid)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	if !ok {
		return nil, http.StatusBadRequest, errorf("Transaction '%s' not found", txid)
	}
	tx := ft.Msg
	weight := blockchain.GetTransactionWeight(btcutil.NewTx(tx))
	out := &specificTxJSON{TxID: txid.String(), Hash: tx.WitnessHash().String(), Version: tx.Version, Size: len(ft.Raw),
		VSize: (weight + 3) / 4, Weight: weight, LockTime: tx.LockTime, Hex: hex.EncodeToString(ft.Raw)}
	if ft.Height >= 0 {
		out.BlockHash, out.Time, out.BlockTime = ft.BlockHash.String(), ft.BlockTime, ft.BlockTime
		tip, ok, err := a.tipHeight(ctx)
		if err != nil {
			return nil, http.StatusInternalServerError, err
		}
		if ok && int64(tip) >= ft.Height {
			out.Confirmations = tip - uint32(ft.Height) + 1
		}
	}
	coinbase := isCoinbaseTx(tx)
	for _, in := range tx.TxIn {
		v := specificVinJSON{Sequence: in.Sequence}
		if coinbase {
			v.Coinbase = hex.EncodeToString(in.SignatureScript)
		} else {
			vout := in.PreviousOutPoint.Index
			asm, _ := txscript.DisasmString(in.SignatureScript)
			v.TxID, v.Vout, v.ScriptSig = in.PreviousOutPoint.Hash.String(), &vout, &asmHex{Asm: asm, Hex: hex.EncodeToString(in.SignatureScript)}
		}
		for _, w := range in.Witness {
			v.TxInWitness = append(v.TxInWitness, hex.EncodeToString(w))
		}
		out.Vin = append(out.Vin, v)
	}
	for i, o := range tx.TxOut {
		v := specificVoutJSON{Value: json.Number(fmt.Sprintf("%d.%08d", o.Value/1e8, o.Value%1e8)), N: i}
		v.ScriptPubKey.Asm, _ = txscript.DisasmString(o.PkScript)
		v.ScriptPubKey.Hex = hex.EncodeToString(o.PkScript)
		class, addrs, reqSigs, _ := txscript.ExtractPkScriptAddrs(o.PkScript, networkParams(a.opts.Network))
		v.ScriptPubKey.Type, v.ScriptPubKey.ReqSigs = class.String(), reqSigs
		for _, addr := range addrs {
			v.ScriptPubKey.Addresses = append(v.ScriptPubKey.Addresses, a.addrs.EncodeAddress(addr))
		}
		out.Vout = append(out.Vout, v)
	}
	return out, http.StatusOK, nil
}
