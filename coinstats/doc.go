// Package coinstats computes the statistics of a UTXO set that Bitcoin
// Core's gettxoutsetinfo and dumptxoutset report, with Core's semantics, so
// that a store can be checked against any Core node at any height:
//
//   - txouts and total_amount: the number of coins in the set and their
//     value (in satoshis here; Core's RPC prints bitcoins);
//   - muhash: MuHash3072 over the coins' serializations, which does not
//     depend on their order and can be kept up to date block by block;
//   - hash_serialized_3: the double SHA-256 of the coins' serializations
//     in outpoint order.
//
// A coin's serialization is Core's TxOutSer (src/kernel/coinstats.cpp):
// the outpoint (txid in internal byte order, vout as 32-bit little-endian),
// height*2+coinbase as 32-bit little-endian, then the output (64-bit
// little-endian value, CompactSize script length, script).
//
// The set is Core's: a coin whose script starts with OP_RETURN or is longer
// than MaxScriptSize bytes can never be spent and is never in it, and
// neither are the outputs of the genesis block, the only block at height 0
// (Core never adds its coinbase). [Coin.InSet] is that rule; [Stats] and
// [Walk] leave out the coins it refuses.
//
// MuHash3072 follows Core's src/crypto/muhash.cpp: each element is hashed
// with SHA-256, the hash keys ChaCha20 (zero nonce, counter 0), and the
// 384-byte keystream, read little-endian, is a number modulo the prime
// 2^3072 - 1103717. Insertions multiply a numerator, removals a
// denominator; the digest is the SHA-256 of the 384-byte little-endian
// quotient. Digests print as Core prints a uint256: byte-reversed hex.
//
// [Stats] is the order-free part (txouts, total_amount and the MuHash
// state) with Add, Remove and a compact binary form, for a store that keeps
// them per block; [Walk] adds hash_serialized_3 for a walk of a whole set
// in outpoint order.
//
// Sources: bitcoin/bitcoin at commit 01f2201bbe9f0febaaea843dead1107f91de6ae7
// (src/kernel/coinstats.cpp), 06a4d404ab0c76712684eada43fcde29ee143b96
// (src/crypto/muhash.cpp, whose test vector src/test/crypto_tests.cpp holds).
package coinstats
