package chain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// Family is one of the chains of the Bitcoin family. Bitcoin Cash split
// from Bitcoin at height 478559 (August 2017) and Bitcoin SV from Bitcoin
// Cash at height 556767 (November 2018): all three share Bitcoin's genesis
// blocks, block header and transaction formats.
type Family int

// The families.
const (
	Bitcoin Family = iota
	BitcoinCash
	BitcoinSV
)

func (f Family) String() string {
	switch f {
	case BitcoinCash:
		return "Bitcoin Cash"
	case BitcoinSV:
		return "Bitcoin SV"
	}
	return "Bitcoin"
}

// Network is one network of one family, as a store holds it (--network).
type Network struct {
	// Name is the name --network takes: "mainnet", "bch-regtest", …
	Name   string
	Family Family
	// Params are btcd's parameters of the network: its genesis block,
	// proof-of-work limit, BIP34 height, P2P magic (Net) and default port,
	// coinbase maturity and address encodings. Bitcoin Cash and Bitcoin SV
	// kept Bitcoin's, except the P2P magic.
	Params *chaincfg.Params
	// DiskMagic starts every frame of the network's blk*.dat files. Bitcoin
	// Cash and Bitcoin SV nodes write Bitcoin's, though their P2P magic
	// differs.
	DiskMagic Magic
	// MaxBlockSize is the size in bytes of the largest block the network
	// accepts by default: Bitcoin's 4 MB (a block's serialisation with
	// witnesses cannot pass 4,000,000 weight units otherwise), Bitcoin
	// Cash's 32 MB, and Bitcoin SV's excessive block size, which each node
	// configures; BlockRules.MaxBlockSize overrides it.
	MaxBlockSize uint64
	// Split, when set, is the block at which the network's chain parted
	// from its sibling's (Bitcoin Cash's and Bitcoin SV's), which shares
	// the network's P2P magic and all blocks below: the one block that
	// tells a node of one from a node of the other.
	Split *Split
	// Coin is the address index's coin name, Blockbook's where Blockbook
	// v0.3.4 has the network (configs/coins/*.json): an index of another
	// network is refused by it.
	Coin string
}

// Split is where two chains that share a P2P magic part: the hash each
// holds at the first height they differ at.
type Split struct {
	Height int32
	// Hash is this network's block there; Sibling names the other chain
	// and SiblingHash is its block.
	Hash        chainhash.Hash
	Sibling     Family
	SiblingHash chainhash.Hash
}

// The P2P magics of Bitcoin Cash and Bitcoin SV, as btcd's wire numbers
// them (the four bytes on the wire, read little-endian): both chains kept
// those of Bitcoin ABC, so they are the same for both families.
const (
	netCashMainnet wire.BitcoinNet = 0xe8f3e1e3 // e3e1f3e8
	netCashTestnet wire.BitcoinNet = 0xf4f3e5f4 // f4e5f3f4
	netCashRegtest wire.BitcoinNet = 0xfabfb5da // dab5bffa
)

// Default block size limits in bytes.
const (
	bitcoinMaxBlockSize = 4_000_000
	cashMaxBlockSize    = 32_000_000
	// svMaxBlockSize is Teranode's default excessive block size, 10 GiB
	// (bsv-blockchain/teranode at fb3d000, settings.conf): Bitcoin SV nodes
	// have no limit by default, so a follower needs one of its own.
	svMaxBlockSize = 10 << 30
)

// The block at height 556767 on each chain (Bitcoin SV's licence names
// its chain by this block; Bitcoin Cash nodes carry theirs as a
// checkpoint).
var (
	cashSplitHash = mustHash("0000000000000000004626ff6e3b936941d341c5932ece4357eeccac44e6d56c")
	svSplitHash   = mustHash("000000000000000001d956714215d96ffc00e0afda4cd0a96c96f8d802b1662b")
)

// networks are the networks a store can hold, by name.
var networks = func() map[string]*Network {
	btc := func(name string, params *chaincfg.Params, coin string) *Network {
		return &Network{Name: name, Family: Bitcoin, Params: params, DiskMagic: netMagic(params.Net), MaxBlockSize: bitcoinMaxBlockSize, Coin: coin}
	}
	// fork copies Bitcoin's network of the same kind with the sibling's
	// P2P magic and its own name.
	fork := func(name string, family Family, base *chaincfg.Params, net wire.BitcoinNet, coin string) *Network {
		params := *base
		params.Name, params.Net = name, net
		params.Checkpoints = nil // Bitcoin's, mostly past the split
		size := uint64(cashMaxBlockSize)
		if family == BitcoinSV {
			size = svMaxBlockSize
		}
		return &Network{Name: name, Family: family, Params: &params, DiskMagic: netMagic(base.Net), MaxBlockSize: size, Coin: coin}
	}
	all := []*Network{
		btc("mainnet", &chaincfg.MainNetParams, "Bitcoin"),
		btc("testnet", &chaincfg.TestNet3Params, "Testnet"),
		btc("testnet3", &chaincfg.TestNet3Params, "Testnet"),
		btc("regtest", &chaincfg.RegressionNetParams, "Regtest"),
		btc("simnet", &chaincfg.SimNetParams, "simnet"),
		btc("signet", &chaincfg.SigNetParams, "Signet"),
		fork("bch-mainnet", BitcoinCash, &chaincfg.MainNetParams, netCashMainnet, "Bcash"),
		fork("bch-testnet", BitcoinCash, &chaincfg.TestNet3Params, netCashTestnet, "Bcash Testnet"),
		fork("bch-regtest", BitcoinCash, &chaincfg.RegressionNetParams, netCashRegtest, "Bcash Regtest"),
		fork("bsv-mainnet", BitcoinSV, &chaincfg.MainNetParams, netCashMainnet, "Bitcoin SV"),
		fork("bsv-testnet", BitcoinSV, &chaincfg.TestNet3Params, netCashTestnet, "Bitcoin SV Testnet"),
		fork("bsv-regtest", BitcoinSV, &chaincfg.RegressionNetParams, netCashRegtest, "Bitcoin SV Regtest"),
	}
	all[6].Split = &Split{Height: 556767, Hash: cashSplitHash, Sibling: BitcoinSV, SiblingHash: svSplitHash}
	all[9].Split = &Split{Height: 556767, Hash: svSplitHash, Sibling: BitcoinCash, SiblingHash: cashSplitHash}
	m := map[string]*Network{}
	for _, n := range all {
		m[n.Name] = n
	}
	return m
}()

// NetworkNames lists the names LookupNetwork knows, sorted.
func NetworkNames() []string {
	names := make([]string, 0, len(networks))
	for name := range networks {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// LookupNetwork returns the network a store names (--network).
func LookupNetwork(name string) (*Network, error) {
	n, ok := networks[name]
	if !ok {
		return nil, fmt.Errorf("chain: unknown network %q (known: %s)", name, strings.Join(NetworkNames(), ", "))
	}
	return n, nil
}

// P2PMagic is the message start of the network's P2P messages.
func (n *Network) P2PMagic() Magic { return netMagic(n.Params.Net) }

// netMagic is the four bytes btcd's wire writes for net.
func netMagic(net wire.BitcoinNet) Magic {
	return Magic{byte(net), byte(net >> 8), byte(net >> 16), byte(net >> 24)}
}

func mustHash(s string) chainhash.Hash {
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		panic(err)
	}
	return *h
}
