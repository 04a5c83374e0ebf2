package chain_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg"

	"github.com/utxostore/utxostore/chain"
)

// genesisOf is params' genesis block, parsed.
func genesisOf(t *testing.T, params *chaincfg.Params) *chain.Block {
	t.Helper()
	var raw bytes.Buffer
	if err := params.GenesisBlock.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	blk, err := chain.ParseBlock(raw.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return blk
}

// TestAnotherNetworksGenesisBlockIsRefusedAtHeightZero: testnet3's
// genesis block, whose proof of work meets mainnet's limit, is refused as
// mainnet's block 0 with CheckGenesis naming both hashes and the network,
// whole and streamed; mainnet's own genesis block passes, and TrustProof
// takes either. Before, nothing compared block 0 with the network's
// genesis block, so a testnet chain was taken for mainnet's.
func TestAnotherNetworksGenesisBlockIsRefusedAtHeightZero(t *testing.T) {
	testnet := genesisOf(t, &chaincfg.TestNet3Params)
	mainnet := genesisOf(t, &chaincfg.MainNetParams)
	rules := mainnetRules(t, false)
	stream := func(blk *chain.Block) error {
		br, err := chain.NewBlockReader(bytes.NewReader(blk.Raw))
		if err != nil {
			t.Fatal(err)
		}
		return rules.CheckStream(br, int64(len(blk.Raw)), 0)
	}
	for how, err := range map[string]error{"whole": rules.Check(testnet, 0), "streamed": stream(testnet)} {
		ce := checkErr(t, err)
		if ce.Check != chain.CheckGenesis || ce.Hash != testnet.Hash || ce.Height != 0 {
			t.Errorf("testnet3's genesis block as mainnet's block 0 (%s): want the genesis check of %s at height 0, got %v", how, testnet.Hash, ce)
		}
		for _, want := range []string{testnet.Hash.String(), chaincfg.MainNetParams.GenesisHash.String(), "network mainnet", "--network"} {
			if !strings.Contains(ce.Reason, want) {
				t.Errorf("testnet3's genesis block as mainnet's block 0 (%s): want a reason naming %q, got %q", how, want, ce.Reason)
			}
		}
	}
	if err := rules.Check(mainnet, 0); err != nil {
		t.Errorf("mainnet's genesis block as its block 0: %v", err)
	}
	if err := stream(mainnet); err != nil {
		t.Errorf("mainnet's genesis block as its block 0, streamed: %v", err)
	}
	trusted := mainnetRules(t, true)
	for _, blk := range []*chain.Block{testnet, mainnet} {
		if err := trusted.Check(blk, 0); err != nil {
			t.Errorf("genesis block %s as mainnet's block 0 with TrustProof: %v", blk.Hash, err)
		}
	}
}
