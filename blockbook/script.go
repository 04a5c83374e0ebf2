package blockbook

import (
	"encoding/hex"

	"github.com/btcsuite/btcd/txscript"
)

// addressesOf is what Blockbook shows for an address descriptor: its
// addresses, and whether they are searchable (isAddress), which Blockbook
// grants to P2PKH, P2SH, P2WPKH and P2WSH only. A descriptor with no
// address that is an OP_RETURN shows as one "OP_RETURN …" entry. The list
// is never nil: Blockbook encodes an empty one as [].
func (a *API) addressesOf(addrDesc []byte) ([]string, bool) {
	out, searchable := a.addrs.Encode(addrDesc)
	if out == nil {
		out = []string{}
	}
	if len(out) == 0 {
		if text := opReturnText(addrDesc); text != "" {
			out = append(out, text)
		}
	}
	return out, searchable
}

// opReturnText is Blockbook's rendering of an OP_RETURN script with one
// push of all its data: the data in parentheses when it is printable
// ASCII, else in hex; "" for any other script.
func opReturnText(script []byte) string {
	if len(script) < 2 || script[0] != txscript.OP_RETURN {
		return ""
	}
	var data []byte
	n := int(script[1])
	data = script[2:]
	if script[1] == txscript.OP_PUSHDATA1 && len(script) > 2 && int(script[2]) == len(script)-3 {
		n, data = int(script[2]), script[3:]
	}
	if n != len(data) {
		return ""
	}
	for _, c := range data {
		if c < 32 || c > 127 {
			return "OP_RETURN " + hex.EncodeToString(data)
		}
	}
	return "OP_RETURN (" + string(data) + ")"
}
