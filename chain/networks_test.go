package chain_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/damage"
)

// TestNetworksOfTheFamily: each family's networks keep Bitcoin's genesis
// block (which passes the network's own rules), proof-of-work limit, BIP34
// height and default port, with Bitcoin Cash's and Bitcoin SV's shared P2P
// magics, and each family's block size limit. The facts are the nodes'
// (bitcoin-sv/bitcoin-sv src/chainparams.cpp; gcash/bchd v0.22.2
// chaincfg/params.go), written here independently of the table.
func TestNetworksOfTheFamily(t *testing.T) {
	type facts struct {
		family  chain.Family
		base    *chaincfg.Params
		p2p     chain.Magic
		port    string
		bip34   int32
		maxSize uint64
	}
	mainP2P, testP2P, regP2P := chain.Magic{0xe3, 0xe1, 0xf3, 0xe8}, chain.Magic{0xf4, 0xe5, 0xf3, 0xf4}, chain.Magic{0xda, 0xb5, 0xbf, 0xfa}
	want := map[string]facts{
		"mainnet":     {chain.Bitcoin, &chaincfg.MainNetParams, chain.MagicMainnet, "8333", 227931, 4_000_000},
		"testnet":     {chain.Bitcoin, &chaincfg.TestNet3Params, chain.MagicTestnet3, "18333", 21111, 4_000_000},
		"testnet3":    {chain.Bitcoin, &chaincfg.TestNet3Params, chain.MagicTestnet3, "18333", 21111, 4_000_000},
		"regtest":     {chain.Bitcoin, &chaincfg.RegressionNetParams, chain.MagicRegtest, "18444", 100000000, 4_000_000},
		"simnet":      {chain.Bitcoin, &chaincfg.SimNetParams, chain.MagicSimnet, "18555", 0, 4_000_000},
		"signet":      {chain.Bitcoin, &chaincfg.SigNetParams, chain.MagicSignet, "38333", 1, 4_000_000},
		"bch-mainnet": {chain.BitcoinCash, &chaincfg.MainNetParams, mainP2P, "8333", 227931, 32_000_000},
		"bch-testnet": {chain.BitcoinCash, &chaincfg.TestNet3Params, testP2P, "18333", 21111, 32_000_000},
		"bch-regtest": {chain.BitcoinCash, &chaincfg.RegressionNetParams, regP2P, "18444", 100000000, 32_000_000},
		"bsv-mainnet": {chain.BitcoinSV, &chaincfg.MainNetParams, mainP2P, "8333", 227931, 10 << 30},
		"bsv-testnet": {chain.BitcoinSV, &chaincfg.TestNet3Params, testP2P, "18333", 21111, 10 << 30},
		"bsv-regtest": {chain.BitcoinSV, &chaincfg.RegressionNetParams, regP2P, "18444", 100000000, 10 << 30},
	}
	if names := chain.NetworkNames(); len(names) != len(want) {
		t.Fatalf("networks %v, want %d", names, len(want))
	}
	for name, w := range want {
		n, err := chain.LookupNetwork(name)
		if err != nil {
			t.Fatal(err)
		}
		p := n.Params
		if n.Family != w.family || n.P2PMagic() != w.p2p || p.DefaultPort != w.port || p.BIP0034Height != w.bip34 || n.MaxBlockSize != w.maxSize {
			t.Errorf("%s: %s, P2P magic %s, port %s, BIP34 at %d, blocks up to %d bytes; want %s, %s, %s, %d, %d",
				name, n.Family, n.P2PMagic(), p.DefaultPort, p.BIP0034Height, n.MaxBlockSize, w.family, w.p2p, w.port, w.bip34, w.maxSize)
		}
		if *p.GenesisHash != *w.base.GenesisHash || p.GenesisBlock.BlockHash() != *p.GenesisHash || p.PowLimitBits != w.base.PowLimitBits || p.PowLimit.Cmp(w.base.PowLimit) != 0 {
			t.Errorf("%s: genesis %s, proof-of-work limit %08x; want Bitcoin's %s, %08x", name, p.GenesisHash, p.PowLimitBits, w.base.GenesisHash, w.base.PowLimitBits)
		}
		var raw bytes.Buffer
		if err := p.GenesisBlock.Serialize(&raw); err != nil {
			t.Fatal(err)
		}
		genesis, err := chain.ParseBlock(raw.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		rules, err := chain.NetworkRules(name, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := rules.Check(genesis, 0); err != nil {
			t.Errorf("%s: its genesis block under its rules: %v", name, err)
		}
	}
	// The split block tells Bitcoin Cash from Bitcoin SV on mainnet.
	bch, _ := chain.LookupNetwork("bch-mainnet")
	bsv, _ := chain.LookupNetwork("bsv-mainnet")
	if bch.Split == nil || bsv.Split == nil || bch.Split.Height != 556767 || bch.Split.Hash != bsv.Split.SiblingHash || bsv.Split.Hash != bch.Split.SiblingHash ||
		bsv.Split.Hash.String() != "000000000000000001d956714215d96ffc00e0afda4cd0a96c96f8d802b1662b" {
		t.Errorf("split blocks: BCH %+v, BSV %+v", bch.Split, bsv.Split)
	}
	if _, err := chain.LookupNetwork("bch"); err == nil || !strings.Contains(err.Error(), "bch-mainnet") {
		t.Errorf("an unknown network: want an error listing the known ones, got %v", err)
	}
}

// A block over the network's size limit is refused, before its
// transactions are looked at; the limit is the rules', so a follower of a
// node with a larger one can raise it.
func TestCheckBlockSize(t *testing.T) {
	blk := bsvBlocks(t)[384188]
	rules, err := chain.NetworkRules("bsv-mainnet", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := rules.Check(blk, 384188); err != nil {
		t.Fatalf("under BSV's default limit: %v", err)
	}
	rules.MaxBlockSize = uint64(blk.Size) - 1
	ce := checkErr(t, rules.Check(blk, 384188))
	if ce.Check != chain.CheckBlockSize || !strings.Contains(ce.Reason, fmt.Sprintf("%d bytes", blk.Size)) {
		t.Errorf("one byte over the limit: want the block size check, got %v", ce)
	}
	rules.MaxBlockSize = uint64(blk.Size)
	if err := rules.Check(blk, 384188); err != nil {
		t.Errorf("at the limit: %v", err)
	}
}

// CheckStream gives Check's answer for every block, whole or damaged in
// any region, and for the CVE-2012-2459 mutation.
func TestCheckStreamAgreesWithCheck(t *testing.T) {
	blocks := mainnetBlocks(t)
	checked, trusted := mainnetRules(t, false), mainnetRules(t, true)
	stream := func(rules chain.BlockRules, raw []byte, height uint32) error {
		br, err := chain.NewBlockReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		return rules.CheckStream(br, int64(len(raw)), height)
	}
	same := func(what string, raw []byte, height uint32) {
		t.Helper()
		blk, err := chain.ParseBlock(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, rules := range []chain.BlockRules{checked, trusted} {
			whole, streamed := rules.Check(blk, height), stream(rules, raw, height)
			if (whole == nil) != (streamed == nil) || (whole != nil && whole.Error() != streamed.Error()) {
				t.Errorf("%s (proof trusted %v): Check says %v, CheckStream %v", what, rules.TrustProof, whole, streamed)
			}
		}
	}
	for height, blk := range blocks {
		same("mainnet block", blk.Raw, uint32(height))
	}
	raw := blocks[damagedHeight].Raw
	cases, err := damage.Flips(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		same(c.Region, c.Block, damagedHeight)
	}
	mutated, err := damage.RepeatTrailingPair(raw)
	if err != nil {
		t.Fatal(err)
	}
	same("repeated trailing pair", mutated.Block, damagedHeight)
	for height, blk := range bsvBlocks(t) {
		same("BSV block", blk.Raw, height)
	}
}
