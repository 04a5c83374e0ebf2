package server

// MainnetBlocks gives the package's external tests the real chain's first
// blocks.
var MainnetBlocks = mainnetBlocks
