package server

// MainnetBlocks and MainnetChainBlocks give the package's external tests
// the real chain's first blocks.
var (
	MainnetBlocks      = mainnetBlocks
	MainnetChainBlocks = mainnetChainBlocks
)
