package coinstats

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"golang.org/x/crypto/chacha20"
)

// MuHash is Bitcoin Core's MuHash3072: a hash of a set of byte strings that
// does not depend on their order, with removal. Its state is a numerator
// (the product of the inserted elements) and a denominator (the product of
// the removed ones); Finalize divides them. The zero value is the empty
// set. A MuHash is not safe for concurrent use.
type MuHash struct {
	// num and den are valid once started is set: the zero MuHash, not
	// started, is the empty set.
	num, den num3072
	started  bool
	// element and mul are scratch space, so that an insertion allocates
	// nothing.
	element num3072
	mul     multiplier
}

// MuHashSize is the length of MuHash's binary form: the numerator and the
// denominator, 384 little-endian bytes each.
const MuHashSize = 2 * numBytes

// start makes the zero MuHash the empty set (numerator and denominator 1).
func (m *MuHash) start() {
	if !m.started {
		m.num.setOne()
		m.den.setOne()
		m.started = true
	}
}

// toElement maps data to its number: SHA-256 of data keys ChaCha20 (zero
// nonce, block counter 0), whose first 384 bytes of keystream, read
// little-endian, are the number (reduced modulo p).
func toElement(e *num3072, data []byte) {
	key := sha256.Sum256(data)
	var nonce [chacha20.NonceSize]byte
	c, err := chacha20.NewUnauthenticatedCipher(key[:], nonce[:])
	if err != nil {
		panic(err) // only for a key or nonce of the wrong size
	}
	var stream [numBytes]byte
	c.XORKeyStream(stream[:], stream[:])
	e.setBytes(stream[:])
}

// Insert adds data to the set.
func (m *MuHash) Insert(data []byte) {
	m.start()
	toElement(&m.element, data)
	m.mul.mul(&m.num, &m.num, &m.element)
}

// Remove takes data out of the set (it need not have been inserted into
// this MuHash: a block's removals can be gathered apart from the set they
// apply to, and Combine merges them).
func (m *MuHash) Remove(data []byte) {
	m.start()
	toElement(&m.element, data)
	m.mul.mul(&m.den, &m.den, &m.element)
}

// Combine adds o's insertions and removals to m.
func (m *MuHash) Combine(o *MuHash) {
	if !o.started {
		return
	}
	m.start()
	m.mul.mul(&m.num, &m.num, &o.num)
	m.mul.mul(&m.den, &m.den, &o.den)
}

// Subtract takes o's insertions and removals back out of m, the inverse of
// Combine: a block's changes undone when the block is disconnected.
func (m *MuHash) Subtract(o *MuHash) {
	if !o.started {
		return
	}
	m.start()
	m.mul.mul(&m.num, &m.num, &o.den)
	m.mul.mul(&m.den, &m.den, &o.num)
}

// Finalize returns the hash of the set: the SHA-256 of the 384-byte
// little-endian numerator divided by the denominator. Like Core's, it
// leaves that quotient as the numerator and 1 as the denominator, the same
// set in its most compact state. The hash prints (String) as Core prints
// it.
func (m *MuHash) Finalize() chainhash.Hash {
	m.start()
	if m.den != (num3072{1}) {
		inv := new(big.Int).ModInverse(m.den.big(), modulus)
		var d num3072
		d.setBig(inv)
		m.mul.mul(&m.num, &m.num, &d)
		m.den.setOne()
	}
	return sha256.Sum256(m.num.appendBytes(make([]byte, 0, numBytes)))
}

// AppendBinary appends m's state, MuHashSize bytes: the numerator and the
// denominator, each 384 bytes little-endian.
func (m *MuHash) AppendBinary(dst []byte) ([]byte, error) {
	m.start()
	return m.den.appendBytes(m.num.appendBytes(dst)), nil
}

// MarshalBinary returns m's state (see AppendBinary).
func (m *MuHash) MarshalBinary() ([]byte, error) {
	return m.AppendBinary(make([]byte, 0, MuHashSize))
}

// ErrMuHashState is the error of UnmarshalBinary for bytes that are no
// MuHash state.
var ErrMuHashState = errors.New("coinstats: not a MuHash state")

// UnmarshalBinary sets m to the state MarshalBinary wrote.
func (m *MuHash) UnmarshalBinary(b []byte) error {
	if len(b) != MuHashSize {
		return fmt.Errorf("%w: %d bytes, want %d", ErrMuHashState, len(b), MuHashSize)
	}
	var num, den num3072
	num.setBytes(b[:numBytes])
	den.setBytes(b[numBytes:])
	if num.isZero() || den.isZero() {
		return fmt.Errorf("%w: a zero numerator or denominator", ErrMuHashState)
	}
	if canonical := den.appendBytes(num.appendBytes(nil)); !bytes.Equal(canonical, b) {
		return fmt.Errorf("%w: a number not below the modulus", ErrMuHashState)
	}
	m.num, m.den, m.started = num, den, true
	return nil
}
