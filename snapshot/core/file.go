// Package core reads and writes Bitcoin Core's UTXO set snapshot, the file
// dumptxoutset writes and loadtxoutset reads, version 2:
//
//	[5]  magic "utxo\xff"
//	u16  version (2), little-endian
//	[4]  network magic (the P2P message start)
//	[32] base block hash, internal byte order
//	u64  coin count, little-endian
//	then, per transaction, in the order of Core's coins database (txid in
//	internal byte order; within a transaction, vout by its VARINT bytes):
//	[32] txid
//	     CompactSize number of its coins
//	     per coin: CompactSize vout, then Core's Coin serialization:
//	       VARINT(height·2 + coinbase)
//	       VARINT(CompressAmount(value))
//	       the script compressed: a special type (0-5) and its 20 or 32
//	       bytes, or VARINT(length + 6) and the script
//
// VARINT is Core's own (see varint.go). Sources: bitcoin/bitcoin at commit
// 0115e2f60165b8bd7c4705868f5224812a5a48f0 (src/node/utxo_snapshot.h),
// src/rpc/blockchain.cpp (WriteUTXOSnapshot), src/compressor.cpp at
// 00808d1f9e36460349e7857554c47b1b04b331fd, src/serialize.h,
// src/coins.h; contrib/utxo-tools/utxo_to_sqlite.py reads the same layout.
//
// The file does not carry the base block's height: whoever loads it must
// know it.
package core

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/snapshot"
	"github.com/utxostore/utxostore/snapshot/internal/binread"
	"github.com/utxostore/utxostore/utxo/record"
)

// Version is the snapshot version this package reads and writes.
const Version = 2

// formatName names the format in errors.
const formatName = "Bitcoin Core UTXO snapshot (dumptxoutset)"

// magic starts every snapshot file.
var magic = []byte{'u', 't', 'x', 'o', 0xff}

// maxCompactSize is Core's MAX_SIZE, the range ReadCompactSize accepts
// for the per-transaction count and the vout.
const maxCompactSize = 0x02000000

// Header is the snapshot's metadata.
type Header struct {
	// Network is the network's magic (its P2P message start).
	Network chain.Magic
	// BaseHash is the block the set is the UTXO set after.
	BaseHash chainhash.Hash
	// Coins is the number of coins that follow.
	Coins uint64
}

// Writer writes a snapshot, a transaction's coins at a time, in the order
// Core's coins database holds them.
type Writer struct {
	w               *bufio.Writer
	want, written   uint64
	last            chainhash.Hash
	started, closed bool
	buf             []byte
}

// NewWriter writes h to w and returns the writer of its h.Coins coins.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	wr := &Writer{w: bufio.NewWriterSize(w, 1<<20), want: h.Coins}
	b := append([]byte(nil), magic...)
	b = binary.LittleEndian.AppendUint16(b, Version)
	b = append(b, h.Network[:]...)
	b = append(b, h.BaseHash[:]...)
	b = binary.LittleEndian.AppendUint64(b, h.Coins)
	_, err := wr.w.Write(b)
	return wr, err
}

// WriteTx writes the coins of one transaction (all of them, in any order
// of vout). Transactions must come in ascending txid order, internal byte
// order, as Core's coins database holds them.
func (w *Writer) WriteTx(coins []coinstats.Coin) error {
	if len(coins) == 0 {
		return fmt.Errorf("core snapshot: a transaction with no coins")
	}
	txid := coins[0].TxID
	if w.started && bytes.Compare(w.last[:], txid[:]) >= 0 {
		return fmt.Errorf("core snapshot: transaction %s after %s: not in txid order", txid, w.last)
	}
	w.started, w.last = true, txid
	// Core writes a transaction's coins in its database's order: by the
	// VARINT bytes of the vout, which differs from numeric order only
	// past vout 16511.
	keys := make([][]byte, len(coins))
	order := make([]int, len(coins))
	for i := range coins {
		if coins[i].TxID != txid {
			return fmt.Errorf("core snapshot: coin %s among the coins of %s", coins[i].Outpoint, txid)
		}
		keys[i], order[i] = appendVarInt(nil, uint64(coins[i].Vout)), i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	w.buf = append(w.buf[:0], txid[:]...)
	w.buf = chain.AppendCompactSize(w.buf, uint64(len(coins)))
	for _, i := range order {
		w.buf = appendCoin(w.buf, &coins[i])
	}
	w.written += uint64(len(coins))
	if w.written > w.want {
		return fmt.Errorf("core snapshot: more coins than the %d the header counts", w.want)
	}
	_, err := w.w.Write(w.buf)
	return err
}

// appendCoin appends the coin's vout and Core's Coin serialization.
func appendCoin(b []byte, c *coinstats.Coin) []byte {
	b = chain.AppendCompactSize(b, uint64(c.Vout))
	code := uint64(c.Height) << 1
	if c.Coinbase {
		code |= 1
	}
	b = appendVarInt(b, code)
	b = appendVarInt(b, compressAmount(c.Value))
	if compressed, ok := compressScript(c.Script); ok {
		return append(b, compressed...)
	}
	b = appendVarInt(b, uint64(len(c.Script))+specialScripts)
	return append(b, c.Script...)
}

// Close flushes what is buffered; the file must hold as many coins as its
// header counts.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.written != w.want {
		return fmt.Errorf("core snapshot: %d coins written, the header counts %d", w.written, w.want)
	}
	return w.w.Flush()
}

// Reader reads a snapshot a transaction at a time.
type Reader struct {
	r      *binread.Reader
	header Header
	left   uint64
	// last is the txid read before, once started.
	last    chainhash.Hash
	started bool
}

// NewReader reads the header from r and returns the reader of the coins.
// A file of another format, version or network (network names it as the
// store does: mainnet, testnet3, regtest, signet) is refused with a
// *snapshot.FileError wrapping what was found.
func NewReader(r io.Reader, network string) (*Reader, error) {
	want, err := chain.NetworkMagic(network)
	if err != nil {
		return nil, err
	}
	rd := &Reader{r: binread.New(r)}
	found := make([]byte, len(magic))
	if err := rd.r.Full(found, "magic"); err != nil {
		return nil, err
	}
	if !bytes.Equal(found, magic) {
		return nil, rd.r.Fail(0, "magic", &snapshot.MagicError{Format: formatName, Found: found, Want: magic})
	}
	version, err := rd.r.Uint16("version")
	if err != nil {
		return nil, err
	}
	if version != Version {
		return nil, rd.r.Fail(5, "version", &snapshot.VersionError{Format: formatName, Found: strconv.Itoa(int(version)), Supported: strconv.Itoa(Version)})
	}
	h := &rd.header
	if err := rd.r.Full(h.Network[:], "network magic"); err != nil {
		return nil, err
	}
	if h.Network != want {
		return nil, rd.r.Fail(7, "network magic", &snapshot.NetworkError{Found: networkName(h.Network), Want: network})
	}
	if h.BaseHash, err = rd.r.Hash("base block hash"); err != nil {
		return nil, err
	}
	if h.Coins, err = rd.r.Uint64("coin count"); err != nil {
		return nil, err
	}
	rd.left = h.Coins
	return rd, nil
}

// networkName names the network of a magic, or gives the magic in hex.
func networkName(m chain.Magic) string {
	if name := m.Network(); name != "unknown" {
		return name
	}
	return "an unknown network (magic " + hex.EncodeToString(m[:]) + ")"
}

// Header is the snapshot's metadata.
func (r *Reader) Header() Header { return r.header }

// Next returns the coins of the next transaction, in ascending vout
// order, and io.EOF once the header's count has been read and the file
// ends there. A transaction whose txid is not above the one before it is
// refused as corrupt, as the writer refuses to write it.
func (r *Reader) Next() ([]coinstats.Coin, error) {
	if r.left == 0 {
		end, err := r.r.AtEnd()
		if err != nil {
			return nil, err
		}
		if !end {
			return nil, r.r.Fail(r.r.Offset(), "end of file", fmt.Errorf("%w: the %d coins the header counts are followed by more bytes", snapshot.ErrTrailingData, r.header.Coins))
		}
		return nil, io.EOF
	}
	number := r.header.Coins - r.left // of the transaction's first coin
	at, field := r.r.Offset(), fmt.Sprintf("txid of coin %d", number)
	txid, err := r.r.Hash(field)
	if err != nil {
		return nil, err
	}
	// Core's coins database holds each transaction's coins together, in
	// txid order: a txid again, or a lower one, is a damaged file.
	if c := bytes.Compare(r.last[:], txid[:]); r.started && c == 0 {
		return nil, r.r.Failf(at, field, "transaction %s again: each transaction's coins come together, in txid order", txid)
	} else if r.started && c > 0 {
		return nil, r.r.Failf(at, field, "transaction %s after %s: not in txid order", txid, r.last)
	}
	r.started, r.last = true, txid
	at, field = r.r.Offset(), fmt.Sprintf("coin count of transaction %s", txid)
	n, err := r.r.CompactSize(field, maxCompactSize)
	if err != nil {
		return nil, err
	}
	if n == 0 || n > r.left {
		return nil, r.r.Failf(at, field, "%d coins, with %d left of the %d the header counts", n, r.left, r.header.Coins)
	}
	// n is the file's word, up to 2^25: the coins grow as they are read,
	// so a count the file does not hold costs no memory.
	coins := make([]coinstats.Coin, 0, min(n, 1024))
	for i := range n {
		c := coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: txid}}
		if err := r.readCoin(&c, number+i); err != nil {
			return nil, err
		}
		coins = append(coins, c)
	}
	r.left -= n
	slices.SortFunc(coins, func(a, b coinstats.Coin) int { return a.Compare(b.Outpoint) })
	for i := 1; i < len(coins); i++ {
		if coins[i].Vout == coins[i-1].Vout {
			return nil, r.r.Failf(at, field, "output %d appears twice", coins[i].Vout)
		}
	}
	return coins, nil
}

// readCoin reads coin number's vout and Coin serialization into c.
func (r *Reader) readCoin(c *coinstats.Coin, number uint64) error {
	field := func(what string) string { return fmt.Sprintf("coin %d %s", number, what) }
	// Core's bound on a vout is below the highest a store holds; min keeps
	// the reader to both should either change.
	vout, err := r.r.CompactSize(field("vout"), min(maxCompactSize, record.MaxWrapperIndex))
	if err != nil {
		return err
	}
	c.Vout = uint32(vout)
	at := r.r.Offset()
	code, err := readVarInt(r.r, field("height and coinbase"))
	if err != nil {
		return err
	}
	if code > 1<<32-1 {
		return r.r.Failf(at, field("height and coinbase"), "%d does not fit 32 bits", code)
	}
	c.Height, c.Coinbase = uint32(code>>1), code&1 == 1
	at = r.r.Offset()
	compressed, err := readVarInt(r.r, field("amount"))
	if err != nil {
		return err
	}
	value, ok := decompressAmount(compressed)
	// A coin worth more than MAX_MONEY is refused, as loadtxoutset
	// refuses it.
	if !ok || value > chain.MaxMoney {
		return r.r.Failf(at, field("amount"), "compressed amount %d is no amount of at most %d satoshis", compressed, uint64(chain.MaxMoney))
	}
	c.Value = value
	c.Script, err = r.readScript(field("script"))
	return err
}

// readScript reads a compressed script.
func (r *Reader) readScript(field string) ([]byte, error) {
	at := r.r.Offset()
	size, err := readVarInt(r.r, field)
	if err != nil {
		return nil, err
	}
	if size > 1<<32-1 {
		return nil, r.r.Failf(at, field, "size %d does not fit 32 bits", size)
	}
	if size < specialScripts {
		payload := make([]byte, specialScriptSize(size))
		if err := r.r.Full(payload, field); err != nil {
			return nil, err
		}
		script, err := decompressScript(size, payload)
		if err != nil {
			return nil, r.r.Failf(at, field, "%v", err)
		}
		return script, nil
	}
	size -= specialScripts
	if size > maxScriptSize {
		// Core reads a script too long to spend as OP_RETURN, skipping it.
		return []byte{opReturn}, r.r.Skip(int64(size), field)
	}
	script := make([]byte, size)
	return script, r.r.Full(script, field)
}
