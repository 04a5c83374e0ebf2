package index

import (
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/txscript"
)

// AddrDesc returns the address descriptor Blockbook v0.3.4 derives from an
// output's locking script: the script itself, except that a pay-to-pubkey
// script becomes the pay-to-pubkey-hash script of the same key, so that
// every output paid to one key is indexed under its one "1…" address.
//
// The pay-to-pubkey test is Blockbook's, not a full script match: 35 or 67
// bytes, a first byte that pushes 33 or 65 bytes, and OP_CHECKSIG last. The
// key is not parsed, and the push length need not match the script length;
// the hash covers everything between the first and the last byte. Matching
// that rule exactly is what keeps the index byte-identical to Blockbook's.
func AddrDesc(script []byte) []byte {
	n := len(script)
	if (n != 35 && n != 67) || script[n-1] != txscript.OP_CHECKSIG ||
		(script[0] != txscript.OP_DATA_33 && script[0] != txscript.OP_DATA_65) {
		return script
	}
	return p2pkhScript(btcutil.Hash160(script[1 : n-1]))
}

// p2pkhScript is OP_DUP OP_HASH160 <20 bytes> OP_EQUALVERIFY OP_CHECKSIG.
func p2pkhScript(hash160 []byte) []byte {
	s := make([]byte, 0, 25)
	s = append(s, txscript.OP_DUP, txscript.OP_HASH160, txscript.OP_DATA_20)
	s = append(s, hash160...)
	return append(s, txscript.OP_EQUALVERIFY, txscript.OP_CHECKSIG)
}
