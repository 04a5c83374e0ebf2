package teranode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/snapshot"
)

const headersFormat = "Teranode block headers (utxo-headers)"

// BlockIndex is one block of a headers file.
type BlockIndex struct {
	Hash    chainhash.Hash
	Height  uint32
	TxCount uint64
	Header  wire.BlockHeader
}

// HeadersWriter writes a headers file: the last block, then every block
// from the genesis block to it.
type HeadersWriter struct {
	w   io.Writer
	buf bytes.Buffer
}

// NewHeadersWriter writes the header naming the last block to w.
func NewHeadersWriter(w io.Writer, last chainhash.Hash, height uint32) (*HeadersWriter, error) {
	b := append([]byte(nil), magicHeaders...)
	b = append(b, last[:]...)
	b = binary.LittleEndian.AppendUint32(b, height)
	_, err := w.Write(b)
	return &HeadersWriter{w: w}, err
}

// Write writes one block.
func (w *HeadersWriter) Write(b *BlockIndex) error {
	w.buf.Reset()
	w.buf.Write(b.Hash[:])
	w.buf.Write(binary.LittleEndian.AppendUint32(nil, b.Height))
	w.buf.Write(binary.LittleEndian.AppendUint64(nil, b.TxCount))
	if err := b.Header.Serialize(&w.buf); err != nil {
		return err
	}
	_, err := w.w.Write(w.buf.Bytes())
	return err
}

// HeadersReader reads a headers file, checking that the first block is
// the network's genesis block, that every header hashes to its block's
// hash, that the blocks follow one another from the first, and that the
// last is the one the file names.
type HeadersReader struct {
	r          hashingReader
	network    string
	genesis    chainhash.Hash
	last       chainhash.Hash
	lastHeight uint32
	previous   *BlockIndex
	count      uint64
	done       bool
}

// NewHeadersReader reads the file's header from r, a file of network
// (named as the store names it: mainnet, testnet3, regtest, ...). Next
// refuses a first block that is not network's genesis block with a
// *snapshot.FileError wrapping a *snapshot.NetworkError.
func NewHeadersReader(r io.Reader, network string) (*HeadersReader, error) {
	n, err := chain.LookupNetwork(network)
	if err != nil {
		return nil, err
	}
	hr := &HeadersReader{r: newHashingReader(r), network: network, genesis: *n.Params.GenesisHash}
	if err := readMagic(hr.r.Reader, magicHeaders, headersFormat); err != nil {
		return nil, err
	}
	if hr.last, err = hr.r.Hash("last block hash"); err != nil {
		return nil, err
	}
	if hr.lastHeight, err = hr.r.Uint32("last block height"); err != nil {
		return nil, err
	}
	return hr, nil
}

// Last is the last block the file names.
func (r *HeadersReader) Last() (chainhash.Hash, uint32) { return r.last, r.lastHeight }

// Next returns the next block, and io.EOF after the last.
func (r *HeadersReader) Next() (*BlockIndex, error) {
	if r.done {
		return nil, io.EOF
	}
	at := r.r.Offset()
	end, err := r.r.AtEnd()
	if err != nil {
		return nil, err
	}
	if end {
		if r.previous == nil || r.previous.Hash != r.last || r.previous.Height != r.lastHeight {
			return nil, r.r.Failf(at, "end of file", "the file names block %s at height %d as its last, but ends after %s", r.last, r.lastHeight, r.describePrevious())
		}
		r.done = true
		return nil, io.EOF
	}
	field := fmt.Sprintf("block %d", r.count)
	b := &BlockIndex{}
	if b.Hash, err = r.r.Hash(field + " hash"); err != nil {
		return nil, err
	}
	if b.Height, err = r.r.Uint32(field + " height"); err != nil {
		return nil, err
	}
	if b.TxCount, err = r.r.Uint64(field + " transaction count"); err != nil {
		return nil, err
	}
	var raw [wire.MaxBlockHeaderPayload]byte
	if err := r.r.Full(raw[:], field+" header"); err != nil {
		return nil, err
	}
	if err := b.Header.Deserialize(bytes.NewReader(raw[:])); err != nil {
		return nil, r.r.Failf(at, field, "header: %v", err)
	}
	if h := b.Header.BlockHash(); h != b.Hash {
		return nil, r.r.Failf(at, field, "its header hashes to %s, not %s", h, b.Hash)
	}
	if r.previous == nil && (b.Height != 0 || b.Hash != r.genesis) {
		return nil, r.r.Fail(at, field, &snapshot.NetworkError{Found: chainOf(b), Want: r.network})
	}
	if p := r.previous; p != nil && (b.Height != p.Height+1 || b.Header.PrevBlock != p.Hash) {
		return nil, r.r.Failf(at, field, "block %s at height %d does not follow %s", b.Hash, b.Height, r.describePrevious())
	}
	r.previous = b
	r.count++
	return b, nil
}

// chainOf names the network whose chain starts at first, or describes
// first when no known network's does. Networks that share a genesis
// block (Bitcoin's and its forks', testnet and testnet3) are named by the
// shortest name of Bitcoin's.
func chainOf(first *BlockIndex) string {
	if first.Height == 0 {
		name := ""
		for _, candidate := range chain.NetworkNames() {
			n, _ := chain.LookupNetwork(candidate)
			if *n.Params.GenesisHash == first.Hash && n.Family == chain.Bitcoin && (name == "" || len(candidate) < len(name)) {
				name = candidate
			}
		}
		if name != "" {
			return name
		}
	}
	return fmt.Sprintf("an unknown network (its first block is %s at height %d)", first.Hash, first.Height)
}

func (r *HeadersReader) describePrevious() string {
	if r.previous == nil {
		return "no block"
	}
	return fmt.Sprintf("block %s at height %d", r.previous.Hash, r.previous.Height)
}

// Sum is the SHA-256 of the file, once Next has returned io.EOF.
func (r *HeadersReader) Sum() []byte { return r.r.sum.Sum(nil) }
