package index

import (
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
	bchcfg "github.com/gcash/bchd/chaincfg"
	bchscript "github.com/gcash/bchd/txscript"
	"github.com/gcash/bchutil"

	"github.com/utxostore/utxostore/chain"
)

// Addresses are a network's address forms as Blockbook v0.3.4 shows and
// takes them: Bitcoin's (base58 and bech32) for Bitcoin and Bitcoin SV,
// and for Bitcoin Cash its cashaddr form ("bitcoincash:q…"), which
// Blockbook's Bitcoin Cash parser shows by default (bchain/coins/bch,
// address_format "cashaddr") and takes beside the legacy form. Bitcoin SV
// shows the legacy form, its nodes' own since they dropped cashaddr
// (Blockbook v0.3.4's configuration for it runs its node with
// usecashaddr=0). The cashaddr codec is gcash/bchutil's, bchd's own.
type Addresses struct {
	params *chaincfg.Params
	// cash is the network's Bitcoin Cash parameters (its cashaddr
	// prefix); nil for the other families.
	cash *bchcfg.Params
}

// AddressesOf returns the address forms of a network, by the name a store
// holds.
func AddressesOf(network string) (Addresses, error) {
	n, err := chain.LookupNetwork(network)
	if err != nil {
		return Addresses{}, err
	}
	a := Addresses{params: n.Params}
	if n.Family == chain.BitcoinCash {
		a.cash = map[string]*bchcfg.Params{
			"bch-mainnet": &bchcfg.MainNetParams, "bch-testnet": &bchcfg.TestNet3Params, "bch-regtest": &bchcfg.RegressionNetParams,
		}[network]
	}
	return a, nil
}

// Encode returns the addresses of an address descriptor (AddrDesc) and
// whether they are searchable, which Blockbook grants to P2PKH, P2SH,
// P2WPKH and P2WSH only; a script of no known form has none.
func (a Addresses) Encode(addrDesc []byte) ([]string, bool) {
	class, addrs, _, err := txscript.ExtractPkScriptAddrs(addrDesc, a.params)
	if err != nil {
		return nil, false
	}
	out := make([]string, 0, len(addrs))
	for _, addr := range addrs {
		out = append(out, a.EncodeAddress(addr))
	}
	switch class {
	case txscript.PubKeyHashTy, txscript.WitnessV0PubKeyHashTy, txscript.ScriptHashTy, txscript.WitnessV0ScriptHashTy:
		return out, true
	}
	return out, false
}

// EncodeAddress is an address in the network's form: a pay-to-pubkey-hash
// or pay-to-script-hash address of Bitcoin Cash in cashaddr.
func (a Addresses) EncodeAddress(addr btcutil.Address) string {
	if a.cash != nil {
		var cash bchutil.Address
		var err error
		switch addr.(type) {
		case *btcutil.AddressPubKeyHash:
			cash, err = bchutil.NewAddressPubKeyHash(addr.ScriptAddress(), a.cash)
		case *btcutil.AddressScriptHash:
			cash, err = bchutil.NewAddressScriptHashFromHash(addr.ScriptAddress(), a.cash)
		}
		if err == nil && cash != nil {
			return a.cash.CashAddressPrefix + ":" + cash.EncodeAddress()
		}
	}
	return addr.EncodeAddress()
}

// ErrNotAnAddress is Decode's refusal of a string that is no address of
// the network.
var ErrNotAnAddress = errors.New("not an address of the network")

// Decode returns the address descriptor of an address of the network: for
// Bitcoin Cash, a cashaddr with its network's prefix (as Blockbook tells
// one apart) or a legacy address.
func (a Addresses) Decode(address string) ([]byte, error) {
	if a.cash != nil && strings.HasPrefix(strings.ToLower(address), a.cash.CashAddressPrefix+":") {
		addr, err := bchutil.DecodeAddress(address, a.cash)
		if err != nil || !addr.IsForNet(a.cash) {
			return nil, fmt.Errorf("%w: %q (%v)", ErrNotAnAddress, address, err)
		}
		switch addr.(type) {
		case *bchutil.AddressPubKeyHash, *bchutil.AddressScriptHash:
		default:
			return nil, fmt.Errorf("%w: %q is a %T", ErrNotAnAddress, address, addr)
		}
		script, err := bchscript.PayToAddrScript(addr)
		if err != nil {
			return nil, fmt.Errorf("%w: %q (%v)", ErrNotAnAddress, address, err)
		}
		return AddrDesc(script), nil
	}
	addr, err := btcutil.DecodeAddress(address, a.params)
	if err != nil || !addr.IsForNet(a.params) {
		return nil, fmt.Errorf("%w: %q (%v)", ErrNotAnAddress, address, err)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q (%v)", ErrNotAnAddress, address, err)
	}
	return AddrDesc(script), nil
}
