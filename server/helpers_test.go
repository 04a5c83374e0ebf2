package server

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/testdata"
	"github.com/utxostore/utxostore/utxo"
)

// mainnetBlocks reads the first n blocks of the real chain.
func mainnetBlocks(t *testing.T, n int) []utxo.Block {
	t.Helper()
	var blocks []utxo.Block
	for height, b := range mainnetChainBlocks(t, n) {
		blocks = append(blocks, utxo.BlockFromChain(b, uint32(height)))
	}
	return blocks
}

// mainnetChainBlocks reads the first n blocks of the real chain, parsed
// as the block path takes them.
func mainnetChainBlocks(t testing.TB, n int) []*chain.Block {
	t.Helper()
	data, err := os.ReadFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []*chain.Block
	for range n {
		size := binary.LittleEndian.Uint32(data[4:])
		b, err := chain.ParseBlock(data[8 : 8+size])
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
		data = data[8+size:]
	}
	return blocks
}
