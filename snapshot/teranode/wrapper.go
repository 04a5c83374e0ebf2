package teranode

import (
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/snapshot/internal/binread"
	"github.com/utxostore/utxostore/utxo/record"
)

// appendWrapper appends the UTXOWrapper of a transaction's coins: txid,
// height and coinbase from the first (coins are one transaction's, all
// alike), then every coin's index, value and script. The layout is the
// store's .outputs blob's too (record.UTXOWrapper).
func appendWrapper(dst []byte, coins []coinstats.Coin) ([]byte, error) {
	first := coins[0]
	w := record.UTXOWrapper{TxID: first.TxID, Height: first.Height, Coinbase: first.Coinbase,
		UTXOs: make([]record.WrappedUTXO, len(coins))}
	for i, c := range coins {
		if c.TxID != first.TxID || c.Height != first.Height || c.Coinbase != first.Coinbase {
			return nil, fmt.Errorf("coin %s (height %d, coinbase %v) among those of %s (height %d, coinbase %v)",
				c.Outpoint, c.Height, c.Coinbase, first.TxID, first.Height, first.Coinbase)
		}
		w.UTXOs[i] = record.WrappedUTXO{Index: c.Vout, Value: c.Value, Script: c.Script}
	}
	b, err := w.Bytes()
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// readWrapper reads one UTXOWrapper; number counts wrappers, for errors.
// Its coins come back in the file's order. An output index above
// record.MaxWrapperIndex is refused: no store can hold that coin; so is a
// value above chain.MaxMoney, as Core's reader refuses it: no such coin
// can exist.
func readWrapper(r *binread.Reader, number uint64) ([]coinstats.Coin, error) {
	txid, err := r.Hash(fmt.Sprintf("transaction %d txid", number))
	if err != nil {
		return nil, err
	}
	return readWrapperAfter(r, txid, number)
}

// readWrapperAfter reads the rest of a UTXOWrapper, after its txid.
func readWrapperAfter(r *binread.Reader, txid chainhash.Hash, number uint64) ([]coinstats.Coin, error) {
	field := func(what string) string { return fmt.Sprintf("transaction %d %s", number, what) }
	code, err := r.Uint32(field("height and coinbase"))
	if err != nil {
		return nil, err
	}
	count, err := r.Uint32(field("output count"))
	if err != nil {
		return nil, err
	}
	coins := make([]coinstats.Coin, 0, min(count, 1024))
	for i := range count {
		c := coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: txid}, Height: code >> 1, Coinbase: code&1 == 1}
		at := r.Offset()
		if c.Vout, err = r.Uint32(field(fmt.Sprintf("output %d index", i))); err != nil {
			return nil, err
		}
		if c.Vout > record.MaxWrapperIndex {
			return nil, r.Failf(at, field(fmt.Sprintf("output %d index", i)), "output index %d is above %d, the highest a store holds", c.Vout, record.MaxWrapperIndex)
		}
		at = r.Offset()
		if c.Value, err = r.Uint64(field(fmt.Sprintf("output %d value", i))); err != nil {
			return nil, err
		}
		if c.Value > chain.MaxMoney {
			return nil, r.Failf(at, field(fmt.Sprintf("output %d value", i)), "%d satoshis is above the %d that can ever exist", c.Value, uint64(chain.MaxMoney))
		}
		size, err := r.Uint32(field(fmt.Sprintf("output %d script length", i)))
		if err != nil {
			return nil, err
		}
		if c.Script, err = r.Bytes(uint64(size), field(fmt.Sprintf("output %d script", i))); err != nil {
			return nil, err
		}
		coins = append(coins, c)
	}
	return coins, nil
}
