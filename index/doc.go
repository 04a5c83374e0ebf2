// Package index is the address index of utxostore: Blockbook's internal
// data format version 5 for Bitcoin-type coins, byte for byte, stored in
// one Pebble database.
//
// # Column families
//
// Blockbook keeps its indexes in RocksDB column families. Pebble has no
// column families, so every key here starts with one prefix byte that names
// its family; the rest of the key and the whole value are Blockbook's bytes.
// The prefix is Blockbook's own column number, so a dump sorts the same way:
//
//	0x00 default         "internalState" -> JSON (coin, dbState, dbColumns[].version = 5, ...)
//	0x01 height          height uint32 BE -> hash[32] + time uint32 BE + nr_txs vuint + size vuint
//	0x02 addresses       addrDesc + ^height uint32 BE -> [](txid[32] + [](index<<1 | last) vint)
//	0x03 blockTxs        height uint32 BE -> [](txid[32] + nr_inputs vuint + [](txid[32] + vout vint))
//	0x04 transactions    txid[32] -> txdata (a cache; this package never fills it, only clears it)
//	0x05 fiatRates       reserved, unused
//	0x06 addressBalance  addrDesc -> nr_txs vuint + sent bigInt + balance bigInt + [](txid[32] + vout vuint + height vuint + value bigInt)
//	0x07 txAddresses     txid[32] -> height vuint + nr_in vuint + [](len vuint + addrDesc + value bigInt) + nr_out vuint + [](len vint, ^len if spent, + addrDesc + value bigInt)
//
// Two families of utxostore's own follow Blockbook's, for the Electrum
// protocol, which names a script by its hash and indexes each script as it
// is (electrum.go): 0x10 scripts (sha256 of an output script -> the
// script) and 0x11 p2pk (which outputs and inputs are pay-to-pubkey, the
// scripts AddrDesc files under a pay-to-pubkey-hash descriptor). Blockbook's
// families are byte for byte the same with or without them.
//
// vuint and vint are github.com/bsm/go-vlq PutUint and PutInt, as in
// Blockbook. bigInt is one length byte and the big-endian magnitude; zero is
// the single byte 0x00. Amounts are satoshis and fit in a uint64, so this
// package holds them as uint64 and refuses a stored bigInt wider than 8 bytes.
//
// Txids and block hashes are stored as Blockbook stores them: the bytes of
// the hex string a block explorer shows, that is the reverse of the internal
// order of chainhash.Hash. The Go API takes and returns chainhash.Hash in
// btcd's internal order and reverses at the codec boundary.
//
// # What is indexed
//
// The address descriptor (addrDesc) of an output is its locking script,
// except that a pay-to-pubkey script is stored as the pay-to-pubkey-hash
// script of its key (AddrDesc), as Blockbook does, so the outputs of the
// early chain, which are mostly pay-to-pubkey, show under their "1…"
// address. Following Blockbook: an output with an empty script (or one longer than
// 1024 bytes) has an empty addrDesc in txAddresses and is not indexed; an
// OP_RETURN output keeps its script in txAddresses but gets no addresses
// or addressBalance entry. Coinbase inputs are stored in txAddresses as an
// empty addrDesc with value 0 and in blockTxs as a zero txid with vout 0.
// An input whose previous transaction is not indexed (an index that did not
// start at genesis) is stored the same way. The genesis block is indexed like
// any other block, as Blockbook does, so its unspendable 50 BTC shows in the
// balance of its address.
//
// # Rollback and the internal state
//
// blockTxs keeps the last Options.RollbackBlocks blocks: connecting height h
// deletes every blockTxs entry below h-RollbackBlocks+1. (Blockbook's loop
// never deletes height 0; this package does.) DisconnectBlock undoes only
// the tip and returns every column to the bytes it had before that block was
// connected, except the blockTxs entry the connect pruned, which is gone;
// that is why rollback is limited to the window.
//
// Every ConnectBlock, DisconnectBlock, bulk flush and bulk disconnection
// (Bulk.Disconnect) is one atomic Pebble batch, or, for a large bulk
// flush, one table Pebble takes in atomically, so after a crash the index
// is always at a block boundary. Open therefore treats a dbState left "open" as Blockbook does, as an unclean
// shutdown that is reported (Index.UncleanShutdown) but not refused, unless
// Options.RefuseUnclean is set. A wrong coin, a data format version other
// than 5 or the state "inconsistent" are refused with a *StateError that
// tells the operator to delete the directory and rebuild the index.
package index
