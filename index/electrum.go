package index

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// The Electrum protocol names an output script by its hash and indexes
// each script as it is, where Blockbook groups a pay-to-pubkey script with
// the pay-to-pubkey-hash script of its key (AddrDesc). Two columns of
// utxostore's own, after Blockbook's, hold what that needs; Blockbook's
// columns are untouched by them:
//
//	0x10 scripts  sha256(script)[32] -> script          every indexed output script
//	0x10 scripts  (empty)            -> electrumVersion  the columns are complete
//	0x11 p2pk     txid[32] + dir + index uint32 BE -> () an output (dir 0) that pays a
//	                                                      pay-to-pubkey script, or an
//	                                                      input (dir 1) that spends one
//
// Both are facts about a script or a transaction, whatever block holds it,
// so disconnecting a block leaves them: a transaction mined again has the
// same entries, and an entry no block references is never read.
const (
	cfScripts column = 0x10
	cfP2PK    column = 0x11
)

// electrumVersion marks an index whose Electrum columns cover every block
// it holds: written when the index is created, so an index made before
// the columns existed lacks it.
const electrumVersion = 1

// ScriptHash is the sha256 of an output script, in its natural byte order
// (the Electrum protocol shows it reversed, as a txid).
type ScriptHash [32]byte

// HashScript is the ScriptHash of script.
func HashScript(script []byte) ScriptHash { return sha256.Sum256(script) }

// HasElectrum reports whether the index holds the Electrum columns for
// every block it has; an index built before they existed does not, and
// is rebuilt to get them.
func (ix *Index) HasElectrum() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.electrum
}

// loadElectrum reads the marker; an empty index gets it.
func (ix *Index) loadElectrum() error {
	val, err := ix.get(cfScripts, nil)
	if err != nil {
		return err
	}
	switch {
	case val != nil:
		if len(val) != 1 || val[0] != electrumVersion {
			return corrupt(cfScripts, nil, "marker %x, want %d", val, electrumVersion)
		}
		ix.electrum = true
	case !ix.hasTip:
		if err := ix.db.Set(cfScripts.key(), []byte{electrumVersion}, ix.wo); err != nil {
			return err
		}
		ix.electrum = true
	}
	return nil
}

// Script returns the output script whose hash is h; ok is false when no
// indexed output pays it.
func (ix *Index) Script(h ScriptHash) (script []byte, ok bool, err error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.db == nil {
		return nil, false, ErrClosed
	}
	val, err := ix.get(cfScripts, h[:])
	return val, val != nil, err
}

// PaysP2PK reports whether output vout of txid (input false), or the
// output input vout of txid spends (input true), is a pay-to-pubkey
// script: how a pay-to-pubkey and a pay-to-pubkey-hash script, which share
// an addrDesc, are told apart.
func (ix *Index) PaysP2PK(txid chainhash.Hash, vout uint32, input bool) (bool, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.db == nil {
		return false, ErrClosed
	}
	return ix.p2pkMark(&txid, vout, input)
}

// p2pkMark is PaysP2PK for a caller that holds the index's lock.
func (ix *Index) p2pkMark(txid *chainhash.Hash, n uint32, input bool) (bool, error) {
	val, err := ix.get(cfP2PK, p2pkKey(txid, n, input)[1:])
	if err != nil {
		return false, fmt.Errorf("index: reading the p2pk column: %w", err)
	}
	return val != nil, nil
}

// p2pkKeySize is the size of a p2pk column's key after its prefix.
const p2pkKeySize = 32 + 1 + 4

func p2pkKey(txid *chainhash.Hash, n uint32, input bool) []byte {
	var k [1 + p2pkKeySize]byte
	k[0] = byte(cfP2PK)
	copy(k[1:33], txid[:])
	if input {
		k[33] = 1
	}
	binary.BigEndian.PutUint32(k[34:], n)
	return k[:]
}

// IsP2PKHShape reports whether addrDesc is a pay-to-pubkey-hash script,
// the one addrDesc that pay-to-pubkey scripts share.
func IsP2PKHShape(addrDesc []byte) bool {
	return len(addrDesc) == 25 && addrDesc[0] == 0x76 && addrDesc[1] == 0xa9 && addrDesc[2] == 0x14 &&
		addrDesc[23] == 0x88 && addrDesc[24] == 0xac
}

// electrumOutput records an indexed output's script, and marks it when it
// is a pay-to-pubkey script (its addrDesc differs from it).
func electrumOutput(wb writes, txid *chainhash.Hash, vout int, script, addrDesc []byte) error {
	h := HashScript(script)
	if err := wb.Set(cfScripts.key(h[:]), script, nil); err != nil {
		return err
	}
	if len(script) != len(addrDesc) {
		return wb.Set(p2pkKey(txid, uint32(vout), false), nil, nil)
	}
	return nil
}

// electrumInput marks input in of tx when the output it spends, whose
// addrDesc is spentDesc, pays a pay-to-pubkey script (which only a
// pay-to-pubkey-hash addrDesc may stand for).
func electrumInput(ws *workset, wb writes, tx *Tx, in int, spentDesc []byte) error {
	if !IsP2PKHShape(spentDesc) {
		return nil
	}
	prev := &tx.Inputs[in]
	p2pk, err := ws.spendsP2PK(&prev.TxID, prev.Vout)
	if err != nil || !p2pk {
		return err
	}
	return wb.Set(p2pkKey(&tx.ID, uint32(in), true), nil, nil)
}
