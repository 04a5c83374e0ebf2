package index

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
)

// A Bitcoin Cash network shows P2PKH and P2SH in cashaddr with its own
// prefix, and takes them back, as it takes the legacy form of the same
// script; a cashaddr of another network, or without its prefix, is no
// address of it. Bitcoin and Bitcoin SV networks show the legacy form.
func TestAddressForms(t *testing.T) {
	hash := bytes.Repeat([]byte{0x5a}, 20)
	p2pkh, p2sh := p2pkhScript(hash), append(append([]byte{txscript.OP_HASH160, 20}, hash...), txscript.OP_EQUAL)
	legacy, _ := btcutil.NewAddressPubKeyHash(hash, &chaincfg.MainNetParams)
	for _, c := range []struct {
		network string
		prefix  string // of every P2PKH and P2SH address shown
	}{
		{"bch-mainnet", "bitcoincash:"},
		{"bch-testnet", "bchtest:"},
		{"bch-regtest", "bchreg:"},
		{"mainnet", "1"},
		{"bsv-mainnet", "1"},
		{"bsv-regtest", "m"},
	} {
		a, err := AddressesOf(c.network)
		if err != nil {
			t.Fatal(err)
		}
		for _, script := range [][]byte{p2pkh, p2sh} {
			addrs, searchable := a.Encode(script)
			if len(addrs) != 1 || !searchable {
				t.Fatalf("%s: %x shows as %v (%v)", c.network, script, addrs, searchable)
			}
			if script[0] == txscript.OP_DUP && !strings.HasPrefix(addrs[0], c.prefix) {
				t.Errorf("%s: P2PKH shows as %s, want the prefix %s", c.network, addrs[0], c.prefix)
			}
			back, err := a.Decode(addrs[0])
			if err != nil || !bytes.Equal(back, script) {
				t.Errorf("%s: %s decodes to %x, %v; want %x", c.network, addrs[0], back, err, script)
			}
			if upper := strings.ToUpper(addrs[0]); c.prefix != "1" && c.prefix != "m" {
				if back, err := a.Decode(upper); err != nil || !bytes.Equal(back, script) {
					t.Errorf("%s: %s in capitals: %x, %v", c.network, upper, back, err)
				}
			}
		}
	}
	bch, _ := AddressesOf("bch-mainnet")
	if back, err := bch.Decode(legacy.EncodeAddress()); err != nil || !bytes.Equal(back, p2pkh) {
		t.Errorf("the legacy form on bch-mainnet: %x, %v", back, err)
	}
	shown, _ := bch.Encode(p2pkh)
	testnet, _ := AddressesOf("bch-testnet")
	for _, wrong := range []string{strings.TrimPrefix(shown[0], "bitcoincash:"), "bchtest:" + strings.TrimPrefix(shown[0], "bitcoincash:"), shown[0][:len(shown[0])-1] + "x"} {
		if _, err := bch.Decode(wrong); !errors.Is(err, ErrNotAnAddress) {
			t.Errorf("bch-mainnet takes %s: %v", wrong, err)
		}
	}
	if _, err := testnet.Decode(shown[0]); !errors.Is(err, ErrNotAnAddress) {
		t.Errorf("bch-testnet takes the mainnet address %s: %v", shown[0], err)
	}
	// A pay-to-pubkey script shows as its key, not searchable; its
	// descriptor is its key's P2PKH, shown in cashaddr.
	key := append([]byte{txscript.OP_DATA_33, 0x02}, bytes.Repeat([]byte{7}, 32)...)
	p2pk := append(key, txscript.OP_CHECKSIG)
	if addrs, searchable := bch.Encode(AddrDesc(p2pk)); len(addrs) != 1 || !searchable || !strings.HasPrefix(addrs[0], "bitcoincash:q") {
		t.Errorf("a P2PK script's descriptor shows as %v (%v)", addrs, searchable)
	}
}
