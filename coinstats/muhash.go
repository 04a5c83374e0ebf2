package coinstats

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
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
	// element, stream and mul are scratch space, so that an insertion
	// allocates little.
	element num3072
	stream  keystream
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
//
// x/crypto's ChaCha20 has no amd64 assembly, and its keystream was a third
// of an element's cost; its ChaCha20-Poly1305 has. That AEAD encrypts with
// the block counter starting at 1 (RFC 8439, section 2.8), so sealing
// zeros gives the keystream's blocks 1 to 5; block 0 comes from ChaCha20.
func toElement(e *num3072, stream *keystream, data []byte) {
	key := sha256.Sum256(data)
	var nonce [chacha20.NonceSize]byte
	c, err := chacha20.NewUnauthenticatedCipher(key[:], nonce[:])
	if err != nil {
		panic(err) // only for a key or nonce of the wrong size
	}
	*stream = keystream{}
	if aead, err := chacha20poly1305.New(key[:]); err == nil {
		c.XORKeyStream(stream[:chacha20BlockSize], stream[:chacha20BlockSize])
		aead.Seal(stream[chacha20BlockSize:chacha20BlockSize], nonce[:], stream[chacha20BlockSize:numBytes], nil)
	} else { // refused in FIPS 140-only mode
		c.XORKeyStream(stream[:numBytes], stream[:numBytes])
	}
	e.setBytes(stream[:numBytes])
}

// chacha20BlockSize is the keystream ChaCha20 makes per block counter.
const chacha20BlockSize = 64

// keystream holds an element's keystream, with room for the tag the AEAD
// appends. The AEAD seals in place over zeros, so toElement zeroes it.
type keystream [numBytes + chacha20poly1305.Overhead]byte

// Insert adds data to the set.
func (m *MuHash) Insert(data []byte) {
	m.start()
	toElement(&m.element, &m.stream, data)
	m.mulInto(&m.num, &m.element)
}

// Remove takes data out of the set (it need not have been inserted into
// this MuHash: a block's removals can be gathered apart from the set they
// apply to, and Combine merges them).
func (m *MuHash) Remove(data []byte) {
	m.start()
	toElement(&m.element, &m.stream, data)
	m.mulInto(&m.den, &m.element)
}

// Combine adds o's insertions and removals to m.
func (m *MuHash) Combine(o *MuHash) {
	if !o.started {
		return
	}
	m.start()
	m.mulInto(&m.num, &o.num)
	m.mulInto(&m.den, &o.den)
}

// Subtract takes o's insertions and removals back out of m, the inverse of
// Combine: a block's changes undone when the block is disconnected.
func (m *MuHash) Subtract(o *MuHash) {
	if !o.started {
		return
	}
	m.start()
	m.mulInto(&m.num, &o.den)
	m.mulInto(&m.den, &o.num)
}

// mulInto multiplies z, m's numerator or denominator, by x, skipping the
// multiplications by one: a block's change starts empty, one that only
// creates coins has a denominator of one, and a chain of small blocks
// (a coin or two each) made four of each block's five multiplications by
// one.
func (m *MuHash) mulInto(z, x *num3072) {
	switch {
	case *x == (num3072{1}):
	case *z == (num3072{1}):
		*z = *x
	default:
		m.mul.mul(z, z, x)
	}
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
