// Package teranode reads and writes the files of Teranode's utxopersister
// service, byte for byte as Teranode writes them (bsv-blockchain/teranode
// at commit fb3d000: services/utxopersister, pkg/fileformat,
// stores/blob/file, cmd/bitcointoutxoset). Every file starts with an
// 8-byte magic naming its type, and Teranode's file store writes beside it
// a sidecar, NAME.sha256, holding "<hex SHA-256 of the file>  <NAME>\n".
//
// The UTXO set after a block, <block hash>.utxo-set:
//
//	[8]  "U-S-1.0 "
//	[32] block hash, internal byte order
//	u32  block height
//	[32] previous block hash
//	a UTXOWrapper per transaction with unspent outputs
//	u64  number of transactions, u64 number of outputs (the footer)
//
// A UTXOWrapper: [32] txid, u32 height·2 + coinbase, u32 number of outputs,
// then per output u32 index, u64 value, u32 script length and the script.
// Every integer is little-endian.
//
// The headers of the chain up to that block, <block hash>.utxo-headers:
//
//	[8]  "U-H-1.0 "
//	[32] the last block's hash, u32 its height
//	per block from the genesis block: [32] hash, u32 height,
//	u64 transaction count, [80] header
//
// A block's changes to the set, <block hash>.utxo-additions and
// <block hash>.utxo-deletions, start "U-A-1.0 " and "U-D-1.0 ", then the
// block's hash and u32 height. The additions hold a UTXOWrapper for each
// of the block's transactions in block order, with the outputs Teranode
// stores as UTXOs (utxo.StoredAsUTXO, Teranode's ShouldStoreOutputAsUTXO),
// even when none is; the deletions hold each input's outpoint ([32] txid,
// u32 index) of every transaction but the coinbase, in block order. Neither
// has a footer. Teranode's block persister writes a block's transactions
// subtree by subtree; a block of one subtree (every block before Teranode)
// comes out in block order, as here.
package teranode
