package blockbook

import (
	"errors"
	"strings"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/base58"
)

// PrivateKeyRefusal is the whole answer to a request that holds an
// extended private key: a wallet's user who pastes one by mistake (for
// its xpub) must not see it again on a page, in an error, a URL, a
// redirect or a log line, so nothing the request sent is repeated.
const PrivateKeyRefusal = "this is a private key; never paste it anywhere — search with its extended public key or an address"

// ErrPrivateKey is the refusal of a request that holds an extended
// private key.
var ErrPrivateKey = errors.New(PrivateKeyRefusal)

// privateVersions are the BIP32 and SLIP-132 version bytes of extended
// private keys.
var privateVersions = map[[4]byte]bool{
	{0x04, 0x88, 0xad, 0xe4}: true, // xprv
	{0x04, 0x35, 0x83, 0x94}: true, // tprv
	{0x04, 0x9d, 0x78, 0x78}: true, // yprv
	{0x04, 0xb2, 0x43, 0x0c}: true, // zprv
	{0x02, 0x95, 0xb0, 0x05}: true, // Yprv
	{0x02, 0xaa, 0x7a, 0x99}: true, // Zprv
	{0x04, 0x4a, 0x4e, 0x28}: true, // uprv
	{0x04, 0x5f, 0x18, 0xbc}: true, // vprv
	{0x02, 0x42, 0x85, 0xb5}: true, // Uprv
	{0x02, 0x57, 0x50, 0x48}: true, // Vprv
}

// An extended key serialises to 78 bytes and a 4-byte checksum, 111 or
// 112 Base58 digits; runs of digits outside these bounds are not decoded.
const (
	extendedKeyLen   = 78 + 4
	minExtendedKey58 = 104
	maxExtendedKey58 = 120
)

// HasPrivateKey reports whether s holds a private key. s is searched as
// runs of Base58 digits (anything else, a slash, a space or a colon,
// separates them, so a path or a pasted "label: key" is searched too),
// and a run is a private key when
//   - it decodes to a BIP32 serialisation whose version is one of a
//     private key's, or whose key data is a private key's (its first byte
//     0x00, as hdkeychain reads it, whatever the version). The checksum
//     is not required to match: a private key with a typing error is
//     still nearly all of the key;
//   - or it is a private key in Wallet Import Format (51 or 52 digits,
//     any network, its checksum matching: a shorter run than an extended
//     key's, which chance must not match).
func HasPrivateKey(s string) bool {
	for _, run := range strings.FieldsFunc(s, func(r rune) bool { return !isBase58(r) }) {
		if len(run) == 51 || len(run) == 52 {
			if _, err := btcutil.DecodeWIF(run); err == nil {
				return true
			}
		}
		if len(run) < minExtendedKey58 || len(run) > maxExtendedKey58 {
			continue
		}
		b := base58.Decode(run)
		if len(b) != extendedKeyLen {
			continue
		}
		// version(4) depth(1) parent fingerprint(4) child number(4)
		// chain code(32) key data(33): the key data starts at 45.
		if privateVersions[[4]byte(b[:4])] || b[45] == 0x00 {
			return true
		}
	}
	return false
}

// isBase58 reports whether r is a digit of Bitcoin's Base58 alphabet.
func isBase58(r rune) bool {
	switch {
	case r >= '1' && r <= '9', r >= 'A' && r <= 'H', r >= 'J' && r <= 'N', r >= 'P' && r <= 'Z',
		r >= 'a' && r <= 'k', r >= 'm' && r <= 'z':
		return true
	}
	return false
}
