package model

// MinedBlockInfo names one block that mined (or, with UnsetMined, no longer
// mines) transactions.
type MinedBlockInfo struct {
	BlockID     uint32
	BlockHeight uint32
	SubtreeIdx  int
	// OnLongestChain: the block is on the longest chain, so the
	// transactions stop being "unmined".
	OnLongestChain bool
	// UnsetMined removes the block instead (it was invalidated or
	// reorganised out).
	UnsetMined bool
}

// CoinbaseMaturity is how many blocks a coinbase's outputs wait: they are
// spendable from the block at the coinbase's height plus CoinbaseMaturity.
const CoinbaseMaturity = 100
