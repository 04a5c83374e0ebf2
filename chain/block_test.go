package chain

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
)

// The four real BSV blocks parse, re-serialise byte-exact from the parsed
// messages, hash to their file names, and every txid is the double SHA-256
// of the transaction's bytes.
func TestParseBSVBlocks(t *testing.T) {
	counts := map[string]int{}
	for name, path := range bsvBlockFiles(t) {
		raw := readFile(t, path)
		blk, err := ParseBlock(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := blk.Hash.String(); got != name {
			t.Errorf("block hash %s, file name %s", got, name)
		}
		if !bytes.Equal(blk.Serialize(), raw) {
			t.Errorf("%s: re-serialisation differs from the file", name)
		}
		if blk.Size != int64(len(raw)) || blk.TxCount != uint64(len(blk.Txs)) {
			t.Errorf("%s: size %d count %d, want %d and %d", name, blk.Size, blk.TxCount, len(raw), len(blk.Txs))
		}
		for i, tx := range blk.Txs {
			if tx.ID != doubleSHA256(tx.Raw) {
				t.Fatalf("%s tx %d: txid %s is not the double SHA-256 of its bytes", name, i, tx.ID)
			}
			if tx.ID != tx.Msg.TxHash() {
				t.Fatalf("%s tx %d: txid differs from wire's TxHash", name, i)
			}
			if tx.IsCoinbase() != (i == 0) {
				t.Errorf("%s tx %d: IsCoinbase = %v", name, i, tx.IsCoinbase())
			}
		}
		counts[name] = len(blk.Txs)
	}
	if got := sortedInts(counts); !slices.Equal(got, bsvTxCounts) {
		t.Errorf("tx counts %v, README says %v", got, bsvTxCounts)
	}
}

// Blocks 384188 and 384189 are consecutive (README).
func TestBSVConsecutiveBlocks(t *testing.T) {
	byCount := map[int]*Block{}
	for _, path := range bsvBlockFiles(t) {
		blk, err := ParseBlock(readFile(t, path))
		if err != nil {
			t.Fatal(err)
		}
		byCount[len(blk.Txs)] = blk
	}
	parent, child := byCount[1356], byCount[564]
	if parent == nil || child == nil {
		t.Fatal("blocks 384188 (1,356 txs) and 384189 (564 txs) not both present")
	}
	if child.PrevHash() != parent.Hash {
		t.Errorf("384189's prev hash %s, 384188's hash %s", child.PrevHash(), parent.Hash)
	}
}

// Streaming a block gives the same transactions as parsing it whole, and
// the reader's final Info matches.
func TestBlockReaderMatchesParseBlock(t *testing.T) {
	for name, path := range bsvBlockFiles(t) {
		raw := readFile(t, path)
		whole, err := ParseBlock(raw)
		if err != nil {
			t.Fatal(err)
		}
		br, err := NewBlockReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if br.Info().Hash != whole.Hash || br.Remaining() != uint64(len(whole.Txs)) {
			t.Fatalf("%s: header info differs", name)
		}
		for i := 0; ; i++ {
			tx, err := br.Next()
			if err == io.EOF {
				if i != len(whole.Txs) {
					t.Fatalf("%s: streamed %d txs, want %d", name, i, len(whole.Txs))
				}
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if tx.ID != whole.Txs[i].ID || !bytes.Equal(tx.Raw, whole.Txs[i].Raw) {
				t.Fatalf("%s tx %d differs", name, i)
			}
		}
		if info := br.Info(); info.Size != int64(len(raw)) || info.TxCount != whole.TxCount {
			t.Errorf("%s: streamed info %+v", name, info)
		}
	}
}

// Every prefix of a real block fails with ErrTruncated, never a panic, and
// the error names a transaction once past the header.
func TestTruncatedBlock(t *testing.T) {
	var raw []byte
	for _, path := range bsvBlockFiles(t) {
		raw = readFile(t, path)
		break
	}
	for _, cut := range []int{0, 1, 79, 80, 81, 200, len(raw) / 2, len(raw) - 1} {
		_, err := ParseBlock(raw[:cut])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: %v, want ErrTruncated", cut, err)
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("cut at %d: %T is not a *ParseError", cut, err)
		}
		if cut > 200 && pe.Tx < 0 {
			t.Errorf("cut at %d: error does not name a transaction: %v", cut, err)
		}
		if _, err := readAllStreamed(raw[:cut]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("streamed, cut at %d: %v, want ErrTruncated", cut, err)
		}
	}
	if _, err := ParseBlock(append(slices.Clip(raw), 0)); !errors.Is(err, ErrTrailingBytes) {
		t.Errorf("block plus one byte: %v, want ErrTrailingBytes", err)
	}
}

// A block header claiming 2^60 transactions is rejected without
// allocating for them.
func TestHostileTxCount(t *testing.T) {
	raw := make([]byte, HeaderSize, HeaderSize+20)
	raw = AppendCompactSize(raw, 1<<60)
	raw = append(raw, make([]byte, 10)...)
	if _, err := ParseBlock(raw); !errors.Is(err, ErrTruncated) {
		t.Errorf("ParseBlock: %v, want ErrTruncated", err)
	}
	if _, err := readAllStreamed(raw); !errors.Is(err, ErrTruncated) {
		t.Errorf("BlockReader: %v, want ErrTruncated", err)
	}
}

// readAllStreamed reads a block with BlockReader to the end and, like
// ParseBlock, treats bytes after the block as an error. (BlockReader alone
// stops at the block's end: on a stream, what follows is the caller's.)
func readAllStreamed(raw []byte) ([]*Tx, error) {
	in := bufio.NewReader(bytes.NewReader(raw))
	br, err := NewBlockReader(in)
	if err != nil {
		return nil, err
	}
	var txs []*Tx
	for {
		tx, err := br.Next()
		if err == io.EOF {
			if _, err := in.Peek(1); err == nil {
				return txs, ErrTrailingBytes
			}
			return txs, nil
		}
		if err != nil {
			return txs, err
		}
		txs = append(txs, tx)
	}
}

// Regression inputs from FuzzParseTx and FuzzParseBlock: a complete value
// followed by one more byte. ParseTx/ParseBlock reject the extra byte;
// BlockReader stops after the block and leaves it unread.
func TestTrailingByteAfterStreamedBlock(t *testing.T) {
	tx := []byte("0000\x00\x000000")          // version "0000", no inputs or outputs, lock time "0000"
	block := asBlock(append(tx[:10:10], '0')) // ... then one stray byte inside the block
	if _, err := ParseTx(append(tx[:10:10], '0')); !errors.Is(err, ErrTrailingBytes) {
		t.Errorf("ParseTx: %v", err)
	}
	if _, err := ParseBlock(block); !errors.Is(err, ErrTrailingBytes) {
		t.Errorf("ParseBlock: %v", err)
	}
	in := bufio.NewReader(bytes.NewReader(block))
	br, err := NewBlockReader(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := br.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := br.Next(); err != io.EOF {
		t.Fatalf("got %v, want io.EOF", err)
	}
	if rest, _ := io.ReadAll(in); string(rest) != "0" {
		t.Errorf("BlockReader consumed past the block; left %q", rest)
	}
}
