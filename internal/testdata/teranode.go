package testdata

// TeranodeDiffs are the SHA-256 digests (hex) of Teranode's additions and
// deletions files of Bitcoin blocks 169 and 170, by height: Teranode's own,
// committed in bsv-blockchain/teranode at fb3d000 as
// services/utxopersister/data/blockstore/<block hash>.utxo-{additions,deletions},
// brought to what fb3d000's code writes. Those files were written by an
// older build, whose magic ended in a NUL (fb3d000's ends in a space) and
// which ended each file with a 32-byte end marker and two counts; when the
// layout lost them, 47 of those 48 bytes were cut from the files, leaving
// one 0x00 after block 170's additions. The digests are of the files with
// the space, without that byte.
var TeranodeDiffs = map[uint32]struct{ Additions, Deletions string }{
	169: {"0b793cab3eb2bef42ce976262aec9913941221a195a65297501fa03248d9faf5", "3b0cafa9dbd0e6940d872c16bcf7c0fc1425e463b40618d2e669912d5a24a1f4"},
	170: {"81d3983eddb2b6677cc4e47b3482595f00f2a97120e6e02853eac6fa9929b769", "79b540e921f1d9bc4e9057b4edcd38ab77929cfb37a22e62331d2adab0214ae1"},
}
