package coinstats

import (
	"encoding/binary"
	"math/big"
	"math/bits"
)

// The MuHash group is the integers modulo the prime p = 2^3072 - primeDiff
// (the largest 3072-bit safe prime), held in machine words.
const (
	numBits   = 3072
	numBytes  = numBits / 8
	numWords  = numBits / bits.UintSize
	primeDiff = 1103717
)

// modulus is p, for the modular inverse Finalize takes.
var modulus = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), numBits), big.NewInt(primeDiff))

// num3072 is a number modulo p, fully reduced (below p), little-endian
// words.
type num3072 [numWords]big.Word

// one is the multiplicative identity.
func (n *num3072) setOne() {
	*n = num3072{}
	n[0] = 1
}

// setBytes sets n to the little-endian number in b (numBytes long), reduced
// modulo p.
func (n *num3072) setBytes(b []byte) {
	for i := range n {
		if bits.UintSize == 64 {
			n[i] = big.Word(binary.LittleEndian.Uint64(b[8*i:]))
		} else {
			n[i] = big.Word(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	n.reduceOnce()
}

// appendBytes appends n as numBytes little-endian bytes.
func (n *num3072) appendBytes(dst []byte) []byte {
	for _, w := range n {
		if bits.UintSize == 64 {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(w))
		} else {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(w))
		}
	}
	return dst
}

// multiplier multiplies numbers modulo p. It holds the scratch space of
// the product, so that a multiplication allocates nothing: the product of
// two 3072-bit numbers is math/big's (which multiplies in assembly), the
// reduction is this package's, which needs no division because p is
// 2^3072 - primeDiff with primeDiff small: hi·2^3072 + lo ≡ lo + hi·primeDiff.
type multiplier struct {
	x, y, product big.Int
}

// mul sets z to x·y mod p. z may be x or y.
func (m *multiplier) mul(z, x, y *num3072) {
	m.x.SetBits(x[:])
	m.y.SetBits(y[:])
	if cap(m.product.Bits()) < 2*numWords {
		m.product.SetBits(make([]big.Word, 0, 2*numWords))
	}
	m.product.Mul(&m.x, &m.y)
	z.reduceProduct(m.product.Bits())
}

// reduceProduct sets z to t mod p, for t (little-endian words, at most
// 2·numWords of them) below 2^6144.
func (z *num3072) reduceProduct(t []big.Word) {
	word := func(i int) uint {
		if i < len(t) {
			return uint(t[i])
		}
		return 0
	}
	// z = lo + hi·primeDiff: each high word times primeDiff, plus the low
	// word and the carry, fits two words.
	var carry uint
	for i := range numWords {
		hi, lo := bits.Mul(word(numWords+i), primeDiff)
		var c uint
		lo, c = bits.Add(lo, word(i), 0)
		hi += c
		lo, c = bits.Add(lo, carry, 0)
		hi += c
		z[i] = big.Word(lo)
		carry = hi
	}
	// What is left above 2^3072 (below primeDiff) folds in the same way,
	// and may carry out once more, leaving a small number.
	for carry != 0 {
		c := z.addWord(carry * primeDiff)
		carry = c
	}
	z.reduceOnce()
}

// addWord adds v to z, returning the carry out of the top word.
func (z *num3072) addWord(v uint) uint {
	var c uint
	w, c := bits.Add(uint(z[0]), v, 0)
	z[0] = big.Word(w)
	for i := 1; i < numWords && c != 0; i++ {
		w, c = bits.Add(uint(z[i]), 0, c)
		z[i] = big.Word(w)
	}
	return c
}

// reduceOnce subtracts p from z when z (below 2^3072) is p or more: every
// word but the lowest is all ones and the lowest is within primeDiff of
// its maximum. Subtracting p is adding primeDiff and dropping 2^3072.
func (z *num3072) reduceOnce() {
	for _, w := range z[1:] {
		if uint(w) != ^uint(0) {
			return
		}
	}
	if uint(z[0]) < ^uint(0)-primeDiff+1 {
		return
	}
	z.addWord(primeDiff)
}

// big returns z as a big.Int sharing its words.
func (z *num3072) big() *big.Int {
	return new(big.Int).SetBits(z[:])
}

// setBig sets z to x, which is below p.
func (z *num3072) setBig(x *big.Int) {
	*z = num3072{}
	copy(z[:], x.Bits())
}

func (z *num3072) isZero() bool { return *z == num3072{} }
