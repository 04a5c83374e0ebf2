package chain

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/internal/testdata"
)

// chainSummary walks a blk*.dat stream with the streaming reader, checking
// the hash chain, and counts blocks and transactions.
func chainSummary(t *testing.T, r io.Reader) (blocks, txs int) {
	t.Helper()
	frames := NewFrameReader(r, MagicMainnet)
	var prev chainhash.Hash
	for {
		br, err := frames.Next()
		if err == io.EOF {
			return blocks, txs
		}
		if err != nil {
			t.Fatalf("block %d: %v", blocks, err)
		}
		info := br.Info()
		if info.PrevHash() != prev {
			t.Fatalf("block %d: prev hash %s, previous block %s", blocks, info.PrevHash(), prev)
		}
		prev = info.Hash
		for {
			_, err := br.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("block %d: %v", blocks, err)
			}
			txs++
		}
		blocks++
	}
}

func TestBTCFile(t *testing.T) {
	f, err := os.Open(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks, txs := chainSummary(t, f)
	if blocks != btcBlocks || txs != btcTxs {
		t.Errorf("%d blocks, %d txs; README says %d and %d", blocks, txs, btcBlocks, btcTxs)
	}
}

// btcd's copy of the same blocks is zero-padded to 16 MiB, like a Bitcoin
// Core block file still being filled.
func TestBTCDPaddedFile(t *testing.T) {
	path := btcdPaddedFile(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks, txs := chainSummary(t, f)
	if blocks != btcBlocks || txs != btcTxs {
		t.Errorf("%s: %d blocks, %d txs; want %d and %d", path, blocks, txs, btcBlocks, btcTxs)
	}
}

// Whole-block reading gives the same blocks, byte-exact.
func TestFrameReaderNextBlock(t *testing.T) {
	raw := readFile(t, testdata.Path(t, "btc-mainnet-0-14131.blk"))
	frames := NewFrameReader(bytes.NewReader(raw), Magic{})
	n := 0
	for {
		blk, err := frames.NextBlock()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		start := frames.Offset() + frameHeaderSize
		if !bytes.Equal(blk.Serialize(), raw[start:start+blk.Size]) {
			t.Fatalf("block %d does not re-serialise byte-exact", n)
		}
		n++
	}
	if n != btcBlocks || frames.Magic() != MagicMainnet {
		t.Errorf("%d blocks, magic %s", n, frames.Magic())
	}
}

// frame wraps a block in blk*.dat framing.
func frame(magic Magic, block []byte) []byte {
	out := append(magic[:], binary.LittleEndian.AppendUint32(nil, uint32(len(block)))...)
	return append(out, block...)
}

// genesisBlock is the first block of the BTC file.
func genesisBlock(t *testing.T) []byte {
	raw := readFile(t, testdata.Path(t, "btc-mainnet-0-14131.blk"))
	size := binary.LittleEndian.Uint32(raw[4:8])
	return raw[8 : 8+size]
}

func TestFrameErrors(t *testing.T) {
	genesis := genesisBlock(t)
	good := frame(MagicMainnet, genesis)

	t.Run("wrong magic names both", func(t *testing.T) {
		data := append(append([]byte{}, good...), frame(MagicTestnet3, genesis)...)
		frames := NewFrameReader(bytes.NewReader(data), MagicMainnet)
		if _, err := frames.NextBlock(); err != nil {
			t.Fatal(err)
		}
		_, err := frames.Next()
		var me *MagicError
		if !errors.As(err, &me) || me.Want != MagicMainnet || me.Got != MagicTestnet3 || me.Offset != int64(len(good)) {
			t.Fatalf("got %v", err)
		}
		t.Log(err)
	})
	t.Run("truncated frame", func(t *testing.T) {
		frames := NewFrameReader(bytes.NewReader(good[:len(good)-3]), MagicMainnet)
		br, err := frames.Next()
		if err != nil {
			t.Fatal(err)
		}
		_, err = br.Next()
		var fe *FrameError
		if !errors.Is(err, ErrTruncated) || !errors.As(err, &fe) || fe.Frame != 0 {
			t.Fatalf("got %v", err)
		}
		if _, err := NewFrameReader(bytes.NewReader(good[:len(good)-3]), MagicMainnet).NextBlock(); !errors.Is(err, ErrTruncated) {
			t.Fatalf("NextBlock: %v", err)
		}
	})
	t.Run("truncated frame header", func(t *testing.T) {
		_, err := NewFrameReader(bytes.NewReader(good[:6]), MagicMainnet).Next()
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("block shorter than frame", func(t *testing.T) {
		padded := frame(MagicMainnet, append(append([]byte{}, genesis...), 0xaa))
		br, err := NewFrameReader(bytes.NewReader(padded), MagicMainnet).Next()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := br.Next(); err != nil {
			t.Fatal(err)
		}
		if _, err := br.Next(); !errors.Is(err, ErrTrailingBytes) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("block longer than frame", func(t *testing.T) {
		short := frame(MagicMainnet, genesis[:len(genesis)-1])
		data := append(short, good...)
		br, err := NewFrameReader(bytes.NewReader(data), MagicMainnet).Next()
		if err != nil {
			t.Fatal(err)
		}
		// The reader must stop at the frame end, not borrow the next frame's bytes.
		if _, err := br.Next(); !errors.Is(err, ErrTruncated) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("zero padding ends data", func(t *testing.T) {
		for _, pad := range []int{1, 3, 4, 1000} {
			data := append(append([]byte{}, good...), make([]byte, pad)...)
			frames := NewFrameReader(bytes.NewReader(data), MagicMainnet)
			if _, err := frames.NextBlock(); err != nil {
				t.Fatal(err)
			}
			if _, err := frames.Next(); err != io.EOF {
				t.Fatalf("pad %d: got %v, want io.EOF", pad, err)
			}
		}
	})
	t.Run("unread block is skipped", func(t *testing.T) {
		frames := NewFrameReader(bytes.NewReader(append(append([]byte{}, good...), good...)), MagicMainnet)
		if _, err := frames.Next(); err != nil {
			t.Fatal(err)
		}
		br, err := frames.Next()
		if err != nil || br.Info().Hash != chainhash.DoubleHashH(genesis[:HeaderSize]) || frames.Offset() != int64(len(good)) {
			t.Fatalf("second frame: %v", err)
		}
	})
}

// A frame may carry its length in Bitcoin SV's 64-bit form (0xffffffff,
// then 8 bytes), which the node writes for blocks of 4 GiB or more: the
// reader takes it for a block of any size, between frames of the 4-byte
// form, and AppendFrameHeader writes the short form below 0xffffffff bytes.
func TestExtendedFrameLength(t *testing.T) {
	block := genesisBlock(t)
	long := binary.LittleEndian.AppendUint32(append([]byte{}, MagicMainnet[:]...), 0xffffffff)
	long = append(binary.LittleEndian.AppendUint64(long, uint64(len(block))), block...)
	file := append(append(frame(MagicMainnet, block), long...), frame(MagicMainnet, block)...)
	frames := NewFrameReader(bytes.NewReader(file), MagicMainnet)
	for i := range 3 {
		blk, err := frames.NextBlock()
		if err != nil || !bytes.Equal(blk.Raw, block) {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if _, err := frames.NextBlock(); err != io.EOF {
		t.Fatalf("after three frames: %v", err)
	}
	if got := AppendFrameHeader(nil, MagicMainnet, uint64(len(block))); !bytes.Equal(got, frame(MagicMainnet, block)[:8]) {
		t.Errorf("short frame header %x", got)
	}
	if got := AppendFrameHeader(nil, MagicMainnet, 1<<32); !bytes.Equal(got, []byte{0xf9, 0xbe, 0xb4, 0xd9, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1, 0, 0, 0}) {
		t.Errorf("long frame header %x", got)
	}
}
