package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chaincfg"
)

// writeGenesis writes params' genesis block as a raw block file (no
// blk*.dat framing, so no network magic) and returns its path.
func writeGenesis(t *testing.T, params *chaincfg.Params) string {
	t.Helper()
	var raw bytes.Buffer
	if err := params.GenesisBlock.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), params.Name+"-genesis.block")
	writeFile(t, path, raw.String())
	return path
}

// TestImportRefusesAnotherNetworksGenesisBlock: testnet3's genesis block,
// given as a raw block file to a mainnet import, is refused with exit
// status 1 naming the genesis check, both genesis hashes and the
// --network to pass, and leaves no store (the data directory was new):
// mainnet's own genesis block then imports into it, and testnet3's
// imports under --network testnet3. Before, a raw file carries no magic to
// refuse, and testnet3's block was recorded as mainnet's block 0.
func TestImportRefusesAnotherNetworksGenesisBlock(t *testing.T) {
	testnet := writeGenesis(t, &chaincfg.TestNet3Params)
	store := []string{"--network", "mainnet", "--data", filepath.Join(t.TempDir(), "data")}
	mustFail(t, append(append([]string{"import", "--quiet"}, store...), testnet),
		"fails the genesis block check", chaincfg.TestNet3Params.GenesisHash.String(), "at height 0",
		"network mainnet's genesis block is "+chaincfg.MainNetParams.GenesisHash.String(), "--network")
	mustRefuse(t, append([]string{"info"}, store...), "no store in data directory", "does not exist")
	mustContain(t, "mainnet's genesis block after the refusal",
		lastLine(t, append(append([]string{"import", "--quiet"}, store...), writeGenesis(t, &chaincfg.MainNetParams))...), `"blocks":1,`, `"height":0,`)
	mustContain(t, "testnet3's genesis block on testnet3",
		lastLine(t, "import", "--quiet", "--network", "testnet3", "--data", t.TempDir(), testnet), `"blocks":1,`, `"height":0,`)
}
