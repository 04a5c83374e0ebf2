package core

import (
	"fmt"

	"github.com/btcsuite/btcd/btcec/v2"
)

// Core's compression of a coin's output (src/compressor.cpp): amounts by
// their trailing zeros, and the common scripts by their hash or key.

// compressAmount is Core's CompressAmount: n as 1 + 10·(9·m + d - 1) + e,
// where n = (10·m + d)·10^e with d the last non-zero digit (e < 9), or
// 1 + 10·(n/10^9 - 1) + 9.
func compressAmount(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	e := uint64(0)
	for n%10 == 0 && e < 9 {
		n /= 10
		e++
	}
	if e < 9 {
		d := n % 10
		n /= 10
		return 1 + (n*9+d-1)*10 + e
	}
	return 1 + (n-1)*10 + 9
}

// decompressAmount is Core's DecompressAmount. ok is false for an x no
// amount below 2^64 compresses to.
func decompressAmount(x uint64) (n uint64, ok bool) {
	if x == 0 {
		return 0, true
	}
	x--
	e := x % 10
	x /= 10
	if e < 9 {
		d := x%9 + 1
		x /= 9
		if x > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = x*10 + d
	} else {
		if x == ^uint64(0) {
			return 0, false
		}
		n = x + 1
	}
	for ; e > 0; e-- {
		if n > ^uint64(0)/10 {
			return 0, false
		}
		n *= 10
	}
	return n, true
}

// The special script types of Core's ScriptCompression: a compressed script
// starts with its type (below specialScripts) and holds only the hash or
// the key's x coordinate; any other script is written whole, its length
// plus specialScripts first.
const (
	scriptP2PKH      = 0x00 // OP_DUP OP_HASH160 <20> OP_EQUALVERIFY OP_CHECKSIG
	scriptP2SH       = 0x01 // OP_HASH160 <20> OP_EQUAL
	scriptP2PKEven   = 0x02 // <33: 02 x> OP_CHECKSIG
	scriptP2PKOdd    = 0x03 // <33: 03 x> OP_CHECKSIG
	scriptP2PKUncomp = 0x04 // <65: 04 x y> OP_CHECKSIG, 0x04 | (y & 1)
	specialScripts   = 6
	// maxScriptSize is Core's MAX_SCRIPT_SIZE: a longer script is read
	// as OP_RETURN, as Core reads it.
	maxScriptSize = 10000
)

const (
	opDup         = 0x76
	opHash160     = 0xa9
	opEqualVerify = 0x88
	opEqual       = 0x87
	opCheckSig    = 0xac
	opReturn      = 0x6a
)

// compressScript returns Core's compressed form of script (type byte and
// payload) and true, or false when Core writes the script whole. An
// uncompressed key compresses only when it is a valid point, since its y
// coordinate has to be recomputed.
func compressScript(s []byte) ([]byte, bool) {
	switch {
	case len(s) == 25 && s[0] == opDup && s[1] == opHash160 && s[2] == 20 && s[23] == opEqualVerify && s[24] == opCheckSig:
		return append([]byte{scriptP2PKH}, s[3:23]...), true
	case len(s) == 23 && s[0] == opHash160 && s[1] == 20 && s[22] == opEqual:
		return append([]byte{scriptP2SH}, s[2:22]...), true
	case len(s) == 35 && s[0] == 33 && s[34] == opCheckSig && (s[1] == 0x02 || s[1] == 0x03):
		return append([]byte{s[1]}, s[2:34]...), true
	case len(s) == 67 && s[0] == 65 && s[66] == opCheckSig && s[1] == 0x04:
		if _, err := btcec.ParsePubKey(s[1:66]); err != nil {
			return nil, false
		}
		return append([]byte{scriptP2PKUncomp | s[65]&1}, s[2:34]...), true
	}
	return nil, false
}

// specialScriptSize is the payload size of a special script type.
func specialScriptSize(kind uint64) int {
	if kind == scriptP2PKH || kind == scriptP2SH {
		return 20
	}
	return 32
}

// decompressScript rebuilds the script of a special type from its payload.
func decompressScript(kind uint64, payload []byte) ([]byte, error) {
	switch kind {
	case scriptP2PKH:
		s := append([]byte{opDup, opHash160, 20}, payload...)
		return append(s, opEqualVerify, opCheckSig), nil
	case scriptP2SH:
		return append(append([]byte{opHash160, 20}, payload...), opEqual), nil
	case scriptP2PKEven, scriptP2PKOdd:
		return append(append([]byte{33, byte(kind)}, payload...), opCheckSig), nil
	default: // scriptP2PKUncomp, its odd twin
		key, err := btcec.ParsePubKey(append([]byte{byte(kind - 2)}, payload...))
		if err != nil {
			return nil, fmt.Errorf("compressed public key is not on the curve: %v", err)
		}
		return append(append([]byte{65}, key.SerializeUncompressed()...), opCheckSig), nil
	}
}
