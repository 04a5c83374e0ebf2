package coinstats

import (
	"bytes"
	"crypto/sha256"
	"math/big"
	"math/rand/v2"
	"testing"

	"golang.org/x/crypto/chacha20"
)

// fromInt is the element Core's MuHash test builds from i: 32 bytes, the
// first i.
func fromInt(i byte) []byte {
	b := make([]byte, 32)
	b[0] = i
	return b
}

// TestMuHashCoreVector is Core's MuHash3072 test vector
// (src/test/crypto_tests.cpp): insert 0 and 1, remove 2.
func TestMuHashCoreVector(t *testing.T) {
	var m MuHash
	m.Insert(fromInt(0))
	m.Insert(fromInt(1))
	m.Remove(fromInt(2))
	const want = "10d312b100cbd32ada024a6646e40d3482fcff103668d2625f10002a607d5863"
	if got := m.Finalize().String(); got != want {
		t.Fatalf("MuHash = %s, want Core's %s", got, want)
	}
	// Finalize keeps the set: once more gives the same hash.
	if got := m.Finalize().String(); got != want {
		t.Fatalf("second Finalize = %s, want %s", got, want)
	}
}

// TestMuHashSetSemantics: the order of insertions does not matter, a
// removal cancels an insertion, and removals gathered in another MuHash
// combine into the same set.
func TestMuHashSetSemantics(t *testing.T) {
	var a, b, empty MuHash
	for i := range byte(20) {
		a.Insert(fromInt(i))
		b.Insert(fromInt(19 - i))
	}
	if a.Finalize() != b.Finalize() {
		t.Fatal("insertion order changed the hash")
	}
	var delta MuHash
	delta.Insert(fromInt(100))
	delta.Remove(fromInt(3))
	a.Combine(&delta)
	b.Insert(fromInt(100))
	b.Remove(fromInt(3))
	if a.Finalize() != b.Finalize() {
		t.Fatal("a combined delta differs from the same changes applied in place")
	}
	var c MuHash
	c.Insert(fromInt(7))
	c.Remove(fromInt(7))
	if c.Finalize() != empty.Finalize() {
		t.Fatal("insert then remove is not the empty set")
	}
}

// TestMuHashBinary: the state survives MarshalBinary, unfinalized (with a
// denominator) too, and damaged states are refused.
func TestMuHashBinary(t *testing.T) {
	var m MuHash
	m.Insert(fromInt(1))
	m.Remove(fromInt(2))
	raw, err := m.MarshalBinary()
	if err != nil || len(raw) != MuHashSize {
		t.Fatalf("MarshalBinary: %d bytes, %v", len(raw), err)
	}
	var back MuHash
	if err := back.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	back.Insert(fromInt(3))
	m.Insert(fromInt(3))
	if back.Finalize() != m.Finalize() {
		t.Fatal("the state read back hashes differently")
	}
	for name, bad := range map[string][]byte{
		"short":        raw[:MuHashSize-1],
		"zero":         make([]byte, MuHashSize),
		"not below p":  bytes.Repeat([]byte{0xff}, MuHashSize),
		"empty":        nil,
		"one too many": append(raw, 0),
	} {
		if err := new(MuHash).UnmarshalBinary(bad); err == nil {
			t.Errorf("%s: UnmarshalBinary accepted it", name)
		}
	}
}

// TestMultiplyMatchesBig checks the reduction modulo 2^3072 - 1103717
// against math/big's Mod, on random numbers and on those near 2^3072 and
// the modulus, where the folds carry.
func TestMultiplyMatchesBig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := func() *big.Int {
		b := make([]byte, numBytes)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return new(big.Int).SetBytes(b)
	}
	top := new(big.Int).Lsh(big.NewInt(1), numBits)
	edges := []*big.Int{
		big.NewInt(0), big.NewInt(1), big.NewInt(primeDiff),
		new(big.Int).Sub(modulus, big.NewInt(1)),
		new(big.Int).Sub(top, big.NewInt(1)),
		new(big.Int).Sub(top, big.NewInt(primeDiff+1)),
		new(big.Int).Lsh(big.NewInt(1), numBits-1),
	}
	var m multiplier
	check := func(x, y *big.Int) {
		t.Helper()
		var a, b, z num3072
		a.setBytes(leBytes(x))
		b.setBytes(leBytes(y))
		m.mul(&z, &a, &b)
		want := new(big.Int).Mul(x, y)
		want.Mod(want, modulus)
		if z.big().Cmp(want) != 0 {
			t.Fatalf("%x · %x mod p:\n got %x\nwant %x", x, y, z.big(), want)
		}
	}
	for _, x := range edges {
		for _, y := range edges {
			check(x, y)
		}
		check(x, random())
	}
	for range 2000 {
		check(random(), random())
	}
}

// leBytes is x (below 2^3072) as numBytes little-endian bytes.
func leBytes(x *big.Int) []byte {
	be := x.FillBytes(make([]byte, numBytes))
	for i, j := 0, len(be)-1; i < j; i, j = i+1, j-1 {
		be[i], be[j] = be[j], be[i]
	}
	return be
}

// BenchmarkMuHashInsert is the cost of one coin in the set's MuHash: the
// element (SHA-256, 384 bytes of ChaCha20) and one multiplication modulo p.
func BenchmarkMuHashInsert(b *testing.B) {
	coin := Coin{Outpoint: Outpoint{Vout: 1}, Height: 500000, Value: 1e8,
		Script: bytes.Repeat([]byte{0x51}, 25)}
	ser := coin.AppendTxOutSer(nil)
	var m MuHash
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ser[0], ser[1] = byte(i), byte(i>>8)
		m.Insert(ser)
	}
}

// BenchmarkMuHashFinalize is the division a digest costs (once per block
// or report, not per coin).
func BenchmarkMuHashFinalize(b *testing.B) {
	var m MuHash
	for i := range byte(10) {
		m.Insert(fromInt(i))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Remove(fromInt(byte(i)))
		m.Finalize()
	}
}

// BenchmarkMultiply is one multiplication modulo p as MuHash does it:
// math/big's product and this package's reduction.
func BenchmarkMultiply(b *testing.B) {
	var x, y num3072
	x.setBytes(bytes.Repeat([]byte{0xa5}, numBytes))
	y.setBytes(bytes.Repeat([]byte{0x3c}, numBytes))
	var m multiplier
	b.ReportAllocs()
	for b.Loop() {
		m.mul(&x, &x, &y)
	}
}

// BenchmarkMultiplyBigMod is the same with math/big's Mod, which divides:
// what the specialised reduction saves.
func BenchmarkMultiplyBigMod(b *testing.B) {
	x := new(big.Int).SetBytes(bytes.Repeat([]byte{0xa5}, numBytes))
	x.Mod(x, modulus)
	y := new(big.Int).SetBytes(bytes.Repeat([]byte{0x3c}, numBytes))
	product := new(big.Int)
	b.ReportAllocs()
	for b.Loop() {
		product.Mul(x, y)
		x.Mod(product, modulus)
	}
}

// TestElementKeystreamIsChaCha20: an element's 384 bytes, of which the
// AEAD makes all but the first block, are ChaCha20's keystream for the
// key, zero nonce, block counter 0.
func TestElementKeystreamIsChaCha20(t *testing.T) {
	var stream keystream
	for i := range 100 {
		data := []byte{byte(i), byte(i >> 8), 0x5a}
		key := sha256.Sum256(data)
		c, err := chacha20.NewUnauthenticatedCipher(key[:], make([]byte, chacha20.NonceSize))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, numBytes)
		c.XORKeyStream(want, want)
		var got, fromWant num3072
		toElement(&got, &stream, data)
		fromWant.setBytes(want)
		if got != fromWant {
			t.Fatalf("data %x: the element is not ChaCha20's keystream", data)
		}
	}
}

// TestMuHashStateAgainstBig checks the numerator and denominator that
// insertions, removals, Combine and Subtract leave, where a multiplication
// by one is skipped (an empty MuHash, a change that removes nothing),
// against products worked out with math/big.
func TestMuHashStateAgainstBig(t *testing.T) {
	element := func(data string) *big.Int {
		var e num3072
		var ks keystream
		toElement(&e, &ks, []byte(data))
		return new(big.Int).Set(e.big())
	}
	mulMod := func(xs ...*big.Int) *big.Int {
		p := big.NewInt(1)
		for _, x := range xs {
			p.Mul(p, x).Mod(p, modulus)
		}
		return p
	}
	check := func(name string, m *MuHash, num, den *big.Int) {
		t.Helper()
		m.start()
		if m.num.big().Cmp(num) != 0 || m.den.big().Cmp(den) != 0 {
			t.Errorf("%s: numerator %x…, denominator %x…; want %x…, %x…", name, m.num.big().Bytes()[:4], m.den.big().Bytes()[:4], num.Bytes()[:4], den.Bytes()[:4])
		}
	}
	a, b, c := element("a"), element("b"), element("c")
	one := big.NewInt(1)

	var created MuHash // a change that only creates
	created.Insert([]byte("a"))
	created.Insert([]byte("b"))
	check("insertions", &created, mulMod(a, b), one)

	var spent MuHash // a change that only spends
	spent.Remove([]byte("c"))
	check("a removal", &spent, one, c)

	var set MuHash
	set.Combine(&created)
	check("combined into an empty MuHash", &set, mulMod(a, b), one)
	set.Combine(&spent)
	check("a removal combined", &set, mulMod(a, b), c)
	set.Combine(&created)
	check("combined again", &set, mulMod(a, b, a, b), c)
	set.Subtract(&created)
	check("subtracted", &set, mulMod(a, b, a, b), mulMod(c, a, b))

	var undo MuHash
	undo.Subtract(&set)
	check("subtracted from an empty MuHash", &undo, mulMod(c, a, b), mulMod(a, b, a, b))
	undo.Combine(&set)
	if undo.Finalize() != new(MuHash).Finalize() {
		t.Error("a set combined with its own subtraction is not the empty set")
	}
}
