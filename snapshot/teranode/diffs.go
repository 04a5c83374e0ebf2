package teranode

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/utxo"
)

const (
	additionsFormat = "Teranode UTXO additions (utxo-additions)"
	deletionsFormat = "Teranode UTXO deletions (utxo-deletions)"
)

// DiffWriter writes a block's additions and deletions files, a
// transaction at a time in block order, as Teranode's utxopersister
// UTXOSet.ProcessTx does.
type DiffWriter struct {
	additions, deletions io.Writer
	height               uint32
	buf                  []byte
}

// NewDiffWriter writes the headers of the two files.
func NewDiffWriter(additions, deletions io.Writer, block chainhash.Hash, height uint32) (*DiffWriter, error) {
	head := append([]byte(nil), block[:]...)
	head = binary.LittleEndian.AppendUint32(head, height)
	if _, err := additions.Write(append(append([]byte(nil), magicAdditions...), head...)); err != nil {
		return nil, err
	}
	if _, err := deletions.Write(append(append([]byte(nil), magicDeletions...), head...)); err != nil {
		return nil, err
	}
	return &DiffWriter{additions: additions, deletions: deletions, height: height}, nil
}

// AddTx writes the outpoints tx spends to the deletions (none for a
// coinbase) and its outputs stored as UTXOs to the additions, as one
// UTXOWrapper even when there are none.
func (d *DiffWriter) AddTx(tx *chain.Tx) error {
	coinbase := tx.IsCoinbase()
	if !coinbase {
		d.buf = d.buf[:0]
		for _, in := range tx.Msg.TxIn {
			d.buf = append(d.buf, in.PreviousOutPoint.Hash[:]...)
			d.buf = binary.LittleEndian.AppendUint32(d.buf, in.PreviousOutPoint.Index)
		}
		if _, err := d.deletions.Write(d.buf); err != nil {
			return err
		}
	}
	d.buf = append(d.buf[:0], tx.ID[:]...)
	code := d.height << 1
	if coinbase {
		code |= 1
	}
	d.buf = binary.LittleEndian.AppendUint32(d.buf, code)
	countAt := len(d.buf)
	d.buf = binary.LittleEndian.AppendUint32(d.buf, 0)
	var count uint32
	for vout, out := range tx.Msg.TxOut {
		if !utxo.StoredAsUTXO(out) {
			continue
		}
		count++
		d.buf = binary.LittleEndian.AppendUint32(d.buf, uint32(vout))
		d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(out.Value))
		d.buf = binary.LittleEndian.AppendUint32(d.buf, uint32(len(out.PkScript)))
		d.buf = append(d.buf, out.PkScript...)
	}
	binary.LittleEndian.PutUint32(d.buf[countAt:], count)
	_, err := d.additions.Write(d.buf)
	return err
}

// DiffHeader is what an additions or deletions file says of its block.
type DiffHeader struct {
	BlockHash chainhash.Hash
	Height    uint32
}

// diffReader is what the readers of additions and deletions files share:
// the hashed file, its header and the count of the entries read.
type diffReader struct {
	r      hashingReader
	header DiffHeader
	count  uint64
}

// openDiff reads the header of a diff file of the given magic and format.
func openDiff(r io.Reader, magic []byte, format string) (diffReader, error) {
	d := diffReader{r: newHashingReader(r)}
	h, err := readDiffHeader(d.r, magic, format)
	d.header = h
	return d, err
}

// Header is what the file says of its block.
func (d *diffReader) Header() DiffHeader { return d.header }

// Sum is the SHA-256 of the file, once Next has returned io.EOF.
func (d *diffReader) Sum() []byte { return d.r.sum.Sum(nil) }

// AdditionsReader reads an additions file.
type AdditionsReader struct{ diffReader }

// NewAdditionsReader reads the file's header from r.
func NewAdditionsReader(r io.Reader) (*AdditionsReader, error) {
	d, err := openDiff(r, magicAdditions, additionsFormat)
	return &AdditionsReader{d}, err
}

// Next returns the next transaction's outputs stored as UTXOs (perhaps
// none) and io.EOF at the end of the file. Their TxID is the
// transaction's, whatever their number.
func (r *AdditionsReader) Next() (chainhash.Hash, []coinstats.Coin, error) {
	end, err := r.r.AtEnd()
	if err != nil || end {
		return chainhash.Hash{}, nil, orEOF(err)
	}
	at := r.r.Offset()
	txid, err := r.r.Hash(fmt.Sprintf("transaction %d txid", r.count))
	if err != nil {
		return txid, nil, err
	}
	// The rest of the wrapper, read with its txid.
	coins, err := readWrapperAfter(r.r.Reader, txid, r.count)
	if err != nil {
		return txid, nil, err
	}
	if len(coins) > 0 && coins[0].Height != r.header.Height {
		return txid, nil, r.r.Failf(at, fmt.Sprintf("transaction %d", r.count), "height %d in a file of block height %d", coins[0].Height, r.header.Height)
	}
	r.count++
	return txid, coins, nil
}

// DeletionsReader reads a deletions file.
type DeletionsReader struct{ diffReader }

// NewDeletionsReader reads the file's header from r.
func NewDeletionsReader(r io.Reader) (*DeletionsReader, error) {
	d, err := openDiff(r, magicDeletions, deletionsFormat)
	return &DeletionsReader{d}, err
}

// Next returns the next outpoint spent, and io.EOF at the end of the file.
func (r *DeletionsReader) Next() (coinstats.Outpoint, error) {
	end, err := r.r.AtEnd()
	if err != nil || end {
		return coinstats.Outpoint{}, orEOF(err)
	}
	var o coinstats.Outpoint
	field := fmt.Sprintf("deletion %d", r.count)
	if o.TxID, err = r.r.Hash(field + " txid"); err != nil {
		return o, err
	}
	if o.Vout, err = r.r.Uint32(field + " index"); err != nil {
		return o, err
	}
	r.count++
	return o, nil
}

func orEOF(err error) error {
	if err != nil {
		return err
	}
	return io.EOF
}

func readDiffHeader(r hashingReader, magic []byte, format string) (DiffHeader, error) {
	var h DiffHeader
	if err := readMagic(r.Reader, magic, format); err != nil {
		return h, err
	}
	var err error
	if h.BlockHash, err = r.Hash("block hash"); err != nil {
		return h, err
	}
	h.Height, err = r.Uint32("block height")
	return h, err
}
