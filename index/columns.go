package index

import "encoding/binary"

// column is the one-byte key prefix that stands in for a RocksDB column
// family. The numbers are Blockbook's column indexes for Bitcoin-type coins.
type column byte

const (
	cfDefault        column = 0
	cfHeight         column = 1
	cfAddresses      column = 2
	cfBlockTxs       column = 3
	cfTransactions   column = 4
	cfFiatRates      column = 5
	cfAddressBalance column = 6
	cfTxAddresses    column = 7
)

// columnNames are Blockbook's names, in Blockbook's order; they appear in
// error messages and in internalState.dbColumns.
var columnNames = [...]string{"default", "height", "addresses", "blockTxs", "transactions", "fiatRates", "addressBalance", "txAddresses"}

func (c column) String() string {
	switch {
	case int(c) < len(columnNames):
		return columnNames[c]
	case c == cfScripts:
		return "scripts"
	case c == cfP2PK:
		return "p2pk"
	}
	return "unknown"
}

// key returns c's prefix followed by the parts.
func (c column) key(parts ...[]byte) []byte {
	n := 1
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 0, n)
	k = append(k, byte(c))
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

// bounds returns the key range holding all of c's keys.
func (c column) bounds() (lo, hi []byte) {
	return []byte{byte(c)}, []byte{byte(c) + 1}
}

func packUint32(v uint32) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return b[:]
}

func heightKey(c column, height uint32) []byte {
	return c.key(packUint32(height))
}

// addressKey stores the height complemented so that an address's blocks
// iterate from the newest to the oldest.
func addressKey(addrDesc []byte, height uint32) []byte {
	return cfAddresses.key(addrDesc, packUint32(^height))
}

const internalStateKey = "internalState"

// maxAddrDescLen is Blockbook's limit; longer scripts are not indexed.
const maxAddrDescLen = 1024

// MaxAddrDescLen is the longest address descriptor the index holds:
// longer output scripts are not indexed, as in Blockbook.
const MaxAddrDescLen = maxAddrDescLen

// indexable reports whether an addrDesc gets addresses and addressBalance
// entries: Blockbook skips empty and OP_RETURN scripts.
func indexable(addrDesc []byte) bool {
	return len(addrDesc) > 0 && addrDesc[0] != 0x6a
}
