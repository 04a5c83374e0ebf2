package follow

import (
	"fmt"
	"sort"
	"strings"

	"github.com/btcsuite/btcd/chaincfg"
)

// networks maps the store's --network names to the P2P parameters (magic,
// genesis block, default port) of that network.
var networks = map[string]*chaincfg.Params{
	"mainnet":  &chaincfg.MainNetParams,
	"testnet":  &chaincfg.TestNet3Params,
	"testnet3": &chaincfg.TestNet3Params,
	"regtest":  &chaincfg.RegressionNetParams,
	"simnet":   &chaincfg.SimNetParams,
	"signet":   &chaincfg.SigNetParams,
}

// Params returns the P2P parameters of a network named as stores name it.
func Params(network string) (*chaincfg.Params, error) {
	p, ok := networks[network]
	if !ok {
		names := make([]string, 0, len(networks))
		for name := range networks {
			names = append(names, name)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("no P2P parameters for network %q: following a node works on %s", network, strings.Join(names, ", "))
	}
	return p, nil
}
