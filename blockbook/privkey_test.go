package blockbook

import (
	"bytes"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
)

// HasPrivateKey finds an extended private key in each of BIP32's and
// SLIP-132's private versions, alone, in a path, after a label, with a
// typing error in its checksum, and in any version when its key data is
// a private key's; it finds none in the public keys or in addresses,
// txids and heights.
func TestHasPrivateKey(t *testing.T) {
	master, err := hdkeychain.NewMaster(bytes.Repeat([]byte{0xa5}, 32), &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	acct, err := master.Derive(hdkeychain.HardenedKeyStart + 44)
	if err != nil {
		t.Fatal(err)
	}
	prefixes := map[string]string{}
	for v := range privateVersions {
		k, err := acct.CloneWithVersion(v[:])
		if err != nil {
			t.Fatal(err)
		}
		s := k.String()
		prefixes[s[:4]] = s
		for _, in := range []string{s, "/api/v2/xpub/" + s, "my key: " + s + "\n", typo(s)} {
			if !HasPrivateKey(in) {
				t.Errorf("%s (version %x) is no private key in %q", s[:4], v, strings.Replace(in, s, "<key>", 1))
			}
		}
	}
	for _, want := range []string{"xprv", "tprv", "yprv", "zprv", "Yprv", "Zprv", "uprv", "vprv", "Uprv", "Vprv"} {
		if prefixes[want] == "" {
			t.Errorf("no version makes a %s key: %v", want, prefixes)
		}
	}
	// The account's private key in Wallet Import Format, of each network
	// and both forms.
	priv, err := acct.ECPrivKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, params := range []*chaincfg.Params{&chaincfg.MainNetParams, &chaincfg.TestNet3Params} {
		for _, compressed := range []bool{true, false} {
			wif, err := btcutil.NewWIF(priv, params, compressed)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range []string{wif.String(), "/api/v2/address/" + wif.String(), "key: " + wif.String() + " "} {
				if !HasPrivateKey(in) {
					t.Errorf("a WIF private key (%s, compressed %v) is no private key in %q", params.Name, compressed, strings.Replace(in, wif.String(), "<key>", 1))
				}
			}
		}
	}
	// Private key data under a public key's version.
	odd, err := acct.CloneWithVersion(chaincfg.MainNetParams.HDPublicKeyID[:])
	if err != nil {
		t.Fatal(err)
	}
	if !HasPrivateKey(odd.String()) {
		t.Errorf("private key data under xpub's version is no private key")
	}
	pub, err := acct.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]byte{nil, versionYpub, versionZpub, versionTpub, versionUpub, versionVpub} {
		k := pub
		if v != nil {
			if k, err = pub.CloneWithVersion(v); err != nil {
				t.Fatal(err)
			}
		}
		if HasPrivateKey(k.String()) {
			t.Errorf("the public key %s is a private key", k)
		}
	}
	for _, s := range []string{"", "170", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
		"000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f", strings.Repeat("1", 111), strings.Repeat("z", 10_000)} {
		if HasPrivateKey(s) {
			t.Errorf("%.40q is a private key", s)
		}
	}
	// echoed never quotes one, not even its first digits.
	if got := echoed(prefixes["xprv"]); strings.Contains(got, prefixes["xprv"][:12]) {
		t.Errorf("echoed quotes the key: %s", got)
	}
}

// typo is s with one digit of its checksum changed.
func typo(s string) string {
	last := s[len(s)-1]
	c := byte('2')
	if last == c {
		c = '3'
	}
	return s[:len(s)-1] + string(c)
}
