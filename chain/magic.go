package chain

import (
	"encoding/hex"
	"fmt"
	"slices"
)

// Magic is the 4-byte network marker that starts every frame of a
// blk*.dat file, in file byte order.
type Magic [4]byte

// Disk magics of the networks whose block files this package reads.
//
// Bitcoin SV (like Bitcoin ABC/Cash, from which it forked) writes block
// files with Bitcoin's disk magic, f9beb4d9, even though its P2P magic is
// e3e1f3e8; so MagicMainnet is the right value for BSV mainnet blk*.dat
// files too.
var (
	MagicMainnet  = Magic{0xf9, 0xbe, 0xb4, 0xd9} // BTC, BSV and BCH mainnet
	MagicTestnet3 = Magic{0x0b, 0x11, 0x09, 0x07} // BTC and BSV testnet
	MagicRegtest  = Magic{0xfa, 0xbf, 0xb5, 0xda} // BTC and BSV regtest
	MagicSimnet   = Magic{0x16, 0x1c, 0x14, 0x12} // btcd's simnet
	MagicSignet   = Magic{0x0a, 0x03, 0xcf, 0x40} // BTC's default signet
	// MagicBSVP2P is BSV/BCH's mainnet P2P magic. Nodes do not write it to
	// block files, but some exporters do, so format detection accepts it.
	MagicBSVP2P = Magic{0xe3, 0xe1, 0xf3, 0xe8}
)

// knownMagics drives format detection and error messages.
var knownMagics = map[Magic]string{
	MagicMainnet:  "mainnet",
	MagicTestnet3: "testnet3",
	MagicRegtest:  "regtest",
	MagicSimnet:   "simnet",
	MagicSignet:   "signet",
	MagicBSVP2P:   "BSV mainnet P2P",
}

// networkMagics lists, by network name as stores and --network name
// networks, the disk magics that network's block files carry; the first
// is the one a block file of that network is written with.
var networkMagics = map[string][]Magic{
	"mainnet":  {MagicMainnet, MagicBSVP2P},
	"testnet":  {MagicTestnet3},
	"testnet3": {MagicTestnet3},
	"regtest":  {MagicRegtest},
	"simnet":   {MagicSimnet},
	"signet":   {MagicSignet},
}

// NetworkMagic returns the disk magic block files of network are written
// with.
func NetworkMagic(network string) (Magic, error) {
	magics, ok := networkMagics[network]
	if !ok {
		return Magic{}, fmt.Errorf("chain: no block-file magic for network %q (known: mainnet, testnet, testnet3, regtest, simnet, signet)", network)
	}
	return magics[0], nil
}

// CheckNetwork returns an error wrapping [ErrOtherNetwork] when m is the
// magic of a network other than network, and nil when it is network's or
// this package does not know which network either belongs to.
func (m Magic) CheckNetwork(network string) error {
	want, known := networkMagics[network]
	if !known || slices.Contains(want, m) || knownMagics[m] == "" {
		return nil
	}
	return fmt.Errorf("%w: its magic %s is %s's, not %s's", ErrOtherNetwork, m, m.Network(), network)
}

func (m Magic) String() string { return hex.EncodeToString(m[:]) }

// Network names the network m belongs to, or "unknown".
func (m Magic) Network() string {
	if name, ok := knownMagics[m]; ok {
		return name
	}
	if m == (Magic{}) {
		return "zero padding"
	}
	return "unknown"
}
