package chain

import (
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// MaxMoney is the most satoshis that can ever exist, 21 million coins: no
// output and no transaction's outputs together may hold more (Bitcoin
// Core's MAX_MONEY, src/consensus/amount.h; BSV and BCH keep the same
// supply).
const MaxMoney = 21_000_000 * 100_000_000

// ValueError is a transaction whose output values no chain accepts: one
// below 0 or above [MaxMoney], or outputs whose sum passes MaxMoney.
type ValueError struct {
	TxID chainhash.Hash
	// Output is the output refused: the one out of range, or the one at
	// which the running sum passes MaxMoney.
	Output int
	Value  int64
	// Reason says which rule the output breaks.
	Reason string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("chain: output %d of transaction %s has value %d, %s", e.Output, e.TxID, e.Value, e.Reason)
}

// CheckOutputValues returns a [*ValueError] naming the first output of tx
// whose value is below 0 or above MaxMoney, or at which the sum of the
// values so far passes MaxMoney; nil when every value and their sum are in
// [0, MaxMoney]. These are the value rules of Bitcoin's CheckTransaction,
// the ones a transaction can be checked for without the outputs it spends.
func CheckOutputValues(tx *Tx) error {
	var sum int64
	for i, out := range tx.Msg.TxOut {
		refuse := func(reason string) error {
			return &ValueError{TxID: tx.ID, Output: i, Value: out.Value, Reason: reason}
		}
		switch {
		case out.Value < 0:
			return refuse("below 0")
		case out.Value > MaxMoney:
			return refuse(fmt.Sprintf("above the %d satoshis that can ever exist", int64(MaxMoney)))
		}
		// Both are at most MaxMoney, so the sum cannot overflow.
		sum += out.Value
		if sum > MaxMoney {
			return refuse(fmt.Sprintf("which takes the outputs' sum to %d, above the %d satoshis that can ever exist", sum, int64(MaxMoney)))
		}
	}
	return nil
}
