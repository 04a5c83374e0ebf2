package chain

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
	"github.com/utxostore/utxostore/internal/testdata"
)

// Fuzz targets assert two things on any input: no panic, and whatever
// parses re-serialises to exactly the bytes it came from. They are seeded
// with real mainnet data when ../shared/data is present, plus small
// synthetic shapes (segwit, zero counts) that the real data lacks.

// seedFile reads a shared data file, or returns nil when it is absent.
func seedFile(name string) []byte {
	dir, ok := testdata.Find()
	if !ok {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return nil
	}
	return b
}

// seedBSVBlock is the smallest real BSV block (or nil).
func seedBSVBlock() []byte {
	dir, ok := testdata.Find()
	if !ok {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "bsv-mainnet", "*.bin"))
	var smallest []byte
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && (smallest == nil || len(b) < len(smallest)) {
			smallest = b
		}
	}
	return smallest
}

// seedTxs returns small real and synthetic transactions.
func seedTxs() [][]byte {
	segwit := bigTx([]byte{0x00, 0x14, 9})
	segwit.TxIn[0].Witness = wire.TxWitness{{0x30}, {0x02, 0x03}}
	zero, _ := hex.DecodeString("01000000000000000000")
	seeds := [][]byte{SerializeTx(bigTx([]byte{0x51}, nil)), SerializeTx(segwit), zero}
	if blk, err := ParseBlock(seedBSVBlock()); err == nil {
		for _, tx := range blk.Txs[:4] {
			seeds = append(seeds, tx.Raw)
		}
	}
	return seeds
}

// asBlock wraps transactions in a block with a fixed header.
func asBlock(txs ...[]byte) []byte {
	b := make([]byte, HeaderSize)
	b[0] = 1
	b = AppendCompactSize(b, uint64(len(txs)))
	for _, tx := range txs {
		b = append(b, tx...)
	}
	return b
}

func FuzzParseTx(f *testing.F) {
	for _, s := range seedTxs() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		tx, err := ParseTx(raw)
		streamed, streamErr := readAllStreamed(asBlock(raw))
		if (err == nil) != (streamErr == nil) {
			t.Fatalf("ParseTx error %v, BlockReader error %v", err, streamErr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(SerializeTx(tx.Msg), raw) {
			t.Fatal("re-serialisation differs")
		}
		if tx.ID != tx.Msg.TxHash() || streamed[0].ID != tx.ID {
			t.Fatal("txid disagrees with wire or with the streamed parse")
		}
	})
}

func FuzzParseBlock(f *testing.F) {
	f.Add(asBlock(seedTxs()...))
	if btc := seedFile("btc-mainnet-0-14131.blk"); len(btc) > 8 {
		f.Add(btc[8 : 8+binary.LittleEndian.Uint32(btc[4:8])]) // genesis
	}
	if bsv := seedBSVBlock(); bsv != nil {
		blk, _ := ParseBlock(bsv)
		small := append([]byte{}, bsv[:HeaderSize]...)
		small = AppendCompactSize(small, 3)
		for _, tx := range blk.Txs[:3] {
			small = append(small, tx.Raw...)
		}
		f.Add(small)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		blk, err := ParseBlock(raw)
		streamed, streamErr := readAllStreamed(raw)
		if (err == nil) != (streamErr == nil) {
			t.Fatalf("ParseBlock error %v, BlockReader error %v", err, streamErr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(blk.Serialize(), raw) {
			t.Fatal("re-serialisation differs")
		}
		if len(streamed) != len(blk.Txs) {
			t.Fatalf("streamed %d txs, parsed %d", len(streamed), len(blk.Txs))
		}
		for i := range streamed {
			if streamed[i].ID != blk.Txs[i].ID {
				t.Fatalf("tx %d differs", i)
			}
		}
	})
}

func FuzzParseEF(f *testing.F) {
	if text := seedFile("bsv-mainnet/fb5329b1f8fe83c36da18c97a096f21f02e8200566d232935f3b0c6284e8b2d0.ef.hex"); text != nil {
		if raw, err := hex.DecodeString(strings.TrimSpace(string(text))); err == nil {
			f.Add(raw)
		}
	}
	synthetic, _ := EncodeEF(&EFTx{Msg: bigTx([]byte{0x51}), PrevOutputs: []*wire.TxOut{{Value: 1000, PkScript: []byte{0x76}}}})
	f.Add(synthetic)
	f.Fuzz(func(t *testing.T, raw []byte) {
		ef, err := ParseEF(raw)
		if err != nil {
			return
		}
		again, err := EncodeEF(ef)
		if err != nil || !bytes.Equal(again, raw) {
			t.Fatalf("re-encoding: %v", err)
		}
		std := ef.StandardTx()
		tx, err := ParseTx(std.Raw)
		if err != nil || tx.ID != ef.TxID() || std.ID != ef.TxID() {
			t.Fatalf("standard form: %v", err)
		}
	})
}

func FuzzFrameReader(f *testing.F) {
	if btc := seedFile("btc-mainnet-0-14131.blk"); btc != nil {
		// The first three frames, then zero padding.
		end := 0
		for range 3 {
			end += frameHeaderSize + int(binary.LittleEndian.Uint32(btc[end+4:]))
		}
		f.Add(append(append([]byte{}, btc[:end]...), make([]byte, 16)...))
	}
	f.Add(frame(MagicTestnet3, asBlock(seedTxs()...)))
	f.Fuzz(func(t *testing.T, data []byte) {
		frames := NewFrameReader(bytes.NewReader(data), Magic{})
		var reframed []byte
		var hashes []chainhash.Hash
		for {
			blk, err := frames.NextBlock()
			if err == io.EOF {
				// What remains is nothing or zero padding at a frame start.
				rest := data[len(reframed):]
				if len(rest) > 0 && !isZero(rest[:min(4, len(rest))]) {
					t.Fatalf("EOF with %d unexplained bytes", len(rest))
				}
				break
			}
			if err != nil {
				var fe *FrameError
				if !errors.As(err, &fe) {
					t.Fatalf("error is %T, not *FrameError", err)
				}
				break
			}
			reframed = append(reframed, frame(frames.Magic(), blk.Serialize())...)
			hashes = append(hashes, blk.Hash)
			if !bytes.HasPrefix(data, reframed) {
				t.Fatal("re-framed blocks are not a prefix of the input")
			}
		}
		// The streaming path sees the same blocks.
		frames = NewFrameReader(bytes.NewReader(data), Magic{})
		for i := range hashes {
			br, err := frames.Next()
			if err != nil || br.Info().Hash != hashes[i] {
				t.Fatalf("streaming frame %d: %v", i, err)
			}
		}
	})
}
