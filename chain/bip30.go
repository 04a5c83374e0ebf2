package chain

import "github.com/btcsuite/btcd/chaincfg/chainhash"

// CheckRepeatedTx: no transaction of the block repeats one mined below it
// (BIP30). It needs the chain's transactions, not the block alone, so
// [BlockRules.Check] does not make it: the block path asks the store, for
// the blocks [BlockRules.ChecksRepeats] names.
const CheckRepeatedTx Check = "BIP30 repeated transaction"

// ChecksRepeats reports whether block hash at height must be checked for a
// transaction repeating one mined below it (BIP30). From the network's
// BIP34 height on, every coinbase holds its block's height, so no
// transaction can repeat one above that height, until the heights of
// blocks below BIP34 whose coinbases happen to start with a push of a
// larger height (Bitcoin Core's BIP34_IMPLIES_BIP30_LIMIT, 1,983,702).
// Bitcoin's two blocks that repeated a coinbase before BIP30 existed are
// exempt, as Bitcoin Core exempts them, on every chain that shares them.
func (r BlockRules) ChecksRepeats(height uint32, hash chainhash.Hash) bool {
	if _, ok := RepeatedCoinbase(height, hash); ok {
		return false
	}
	return int64(height) < int64(r.Params.BIP0034Height) || height >= bip34ImpliesBIP30Below
}

// RepeatedCoinbase reports, for one of the two blocks whose coinbase
// repeats an earlier block's, the earlier block's height. The repeat
// overwrote the earlier coinbase's unspent outputs: Bitcoin Core's set
// holds each once, at the repeat's height, and the earlier copy is lost.
func RepeatedCoinbase(height uint32, hash chainhash.Hash) (earlier uint32, ok bool) {
	repeat, ok := bip30Repeats[height]
	if !ok || repeat.hash != hash {
		return 0, false
	}
	return repeat.of, true
}

const bip34ImpliesBIP30Below = 1_983_702

// bip30Repeats are the blocks at 91842 and 91880, whose coinbases repeat
// those of blocks 91812 and 91722 (BIP30's specification,
// https://github.com/bitcoin/bips/blob/master/bip-0030.mediawiki).
var bip30Repeats = map[uint32]struct {
	hash chainhash.Hash
	of   uint32 // the height of the block whose coinbase it repeats
}{
	91842: {mustHash("00000000000a4d0a398161ffc163c503763b1f4360639393e0e4c8e300e0caec"), 91812},
	91880: {mustHash("00000000000743f190a18c5577a3c2d2a1f610ae9601ac046a38084ccb7cd721"), 91722},
}
