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
// Bitcoin SV and Bitcoin Cash write block files with Bitcoin's disk
// magics, even though their P2P magics differ ([Network.DiskMagic]); so
// MagicMainnet is the right value for BSV and BCH mainnet blk*.dat files
// too.
var (
	MagicMainnet  = Magic{0xf9, 0xbe, 0xb4, 0xd9} // BTC, BSV and BCH mainnet
	MagicTestnet3 = Magic{0x0b, 0x11, 0x09, 0x07} // BTC, BSV and BCH testnet
	MagicRegtest  = Magic{0xfa, 0xbf, 0xb5, 0xda} // BTC, BSV and BCH regtest
	MagicSimnet   = Magic{0x16, 0x1c, 0x14, 0x12} // btcd's simnet
	MagicSignet   = Magic{0x0a, 0x03, 0xcf, 0x40} // BTC's default signet
	// MagicBSVP2P is BSV/BCH's mainnet P2P magic. Nodes do not write it to
	// block files, but some exporters do, so format detection accepts it.
	MagicBSVP2P = Magic{0xe3, 0xe1, 0xf3, 0xe8}
)

// knownMagics drives format detection and error messages: the disk magics
// by network, and the P2P magics Bitcoin Cash and Bitcoin SV share, which
// some exporters write to block files.
var knownMagics = map[Magic]string{
	MagicMainnet:             "mainnet",
	MagicTestnet3:            "testnet3",
	MagicRegtest:             "regtest",
	MagicSimnet:              "simnet",
	MagicSignet:              "signet",
	MagicBSVP2P:              "BSV mainnet P2P",
	netMagic(netCashTestnet): "BSV testnet P2P",
	netMagic(netCashRegtest): "BSV regtest P2P",
}

// networkMagics lists, by network name as stores and --network name
// networks, the magics that network's block files carry; the first is the
// one a block file of that network is written with, its disk magic.
var networkMagics = func() map[string][]Magic {
	m := map[string][]Magic{}
	for name, n := range networks {
		m[name] = []Magic{n.DiskMagic}
		if p2p := n.P2PMagic(); p2p != n.DiskMagic {
			m[name] = append(m[name], p2p)
		}
	}
	// Bitcoin SV blocks were long imported as "mainnet", the network whose
	// rules they share below the split.
	m["mainnet"] = append(m["mainnet"], MagicBSVP2P)
	return m
}()

// NetworkMagic returns the disk magic block files of network are written
// with.
func NetworkMagic(network string) (Magic, error) {
	n, err := LookupNetwork(network)
	if err != nil {
		return Magic{}, fmt.Errorf("chain: no block-file magic: %w", err)
	}
	return n.DiskMagic, nil
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
