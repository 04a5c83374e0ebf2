package follow

import (
	"github.com/btcsuite/btcd/chaincfg"

	"github.com/utxostore/utxostore/chain"
)

// Params returns the P2P parameters (magic, genesis block, default port)
// of a network named as stores name it.
func Params(network string) (*chaincfg.Params, error) { return chain.NetworkParams(network) }
