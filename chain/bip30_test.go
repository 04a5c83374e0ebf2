package chain

import (
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// TestChecksRepeatsWhereBIP30Applies: below the network's BIP34 height and
// from 1,983,702 on a block is checked for repeated transactions, between
// them not; mainnet's two exempt blocks are not checked, another block at
// their heights is.
func TestChecksRepeatsWhereBIP30Applies(t *testing.T) {
	mainnet, err := NetworkRules("mainnet", false)
	if err != nil {
		t.Fatal(err)
	}
	regtest, err := NetworkRules("regtest", false)
	if err != nil {
		t.Fatal(err)
	}
	bip34 := uint32(mainnet.Params.BIP0034Height)
	other := chainhash.Hash{1}
	for _, c := range []struct {
		rules  BlockRules
		height uint32
		hash   chainhash.Hash
		want   bool
	}{
		{mainnet, 0, other, true},
		{mainnet, 91842, bip30Repeats[91842].hash, false},
		{mainnet, 91880, bip30Repeats[91880].hash, false},
		{mainnet, 91842, other, true},
		{mainnet, 91880, bip30Repeats[91842].hash, true},
		{mainnet, bip34 - 1, other, true},
		{mainnet, bip34, other, false},
		{mainnet, 1_983_701, other, false},
		{mainnet, 1_983_702, other, true},
		{regtest, 1_000_000, other, true},
	} {
		if got := c.rules.ChecksRepeats(c.height, c.hash); got != c.want {
			t.Errorf("%s, block %s at height %d: ChecksRepeats %v, want %v", c.rules.Params.Name, c.hash, c.height, got, c.want)
		}
	}
}
