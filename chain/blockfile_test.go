package chain

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/internal/testdata"
)

// countFile reads every block of a file with OpenBlockFile.
func countFile(t *testing.T, path string) (format Format, blocks, txs int) {
	t.Helper()
	bf, err := OpenBlockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	for {
		br, err := bf.Next()
		if err == io.EOF {
			return bf.Format(), blocks, txs
		}
		if err != nil {
			t.Fatal(err)
		}
		blocks++
		txs += int(br.Remaining())
	}
}

func TestOpenBlockFileDetectsFormat(t *testing.T) {
	format, blocks, txs := countFile(t, testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if format != FormatFramed || blocks != btcBlocks || txs != btcTxs {
		t.Errorf("btc file: %s, %d blocks, %d txs", format, blocks, txs)
	}
	counts := map[string]int{}
	for name, path := range bsvBlockFiles(t) {
		format, blocks, txs := countFile(t, path)
		if format != FormatRawBlock || blocks != 1 {
			t.Errorf("%s: %s, %d blocks", name, format, blocks)
		}
		counts[name] = txs
	}
	if got := sortedInts(counts); len(got) != len(bsvTxCounts) || got[0] != bsvTxCounts[0] {
		t.Errorf("raw block tx counts %v", got)
	}
}

func TestOpenBlockFileErrors(t *testing.T) {
	dir := t.TempDir()
	tiny := filepath.Join(dir, "tiny")
	if err := os.WriteFile(tiny, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBlockFile(tiny); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("tiny file: %v", err)
	}

	var block []byte
	for _, p := range bsvBlockFiles(t) {
		block = readFile(t, p)
		break
	}
	trailing := filepath.Join(dir, "trailing.bin")
	if err := os.WriteFile(trailing, append(block, 0), 0o600); err != nil {
		t.Fatal(err)
	}
	bf, err := OpenBlockFile(trailing)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	if _, err := bf.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := bf.Next(); !errors.Is(err, ErrTrailingBytes) {
		t.Errorf("raw block with a trailing byte: %v", err)
	}
}

func TestMagicCheckNetwork(t *testing.T) {
	for _, c := range []struct {
		magic   Magic
		network string
		refused bool
	}{
		{MagicMainnet, "mainnet", false},
		{MagicBSVP2P, "mainnet", false},
		{MagicTestnet3, "testnet", false},
		{MagicTestnet3, "testnet3", false},
		{MagicRegtest, "regtest", false},
		{MagicMainnet, "testnet", true},
		{MagicTestnet3, "mainnet", true},
		{MagicRegtest, "mainnet", true},
		{MagicBSVP2P, "regtest", true},
		{MagicSimnet, "simnet", false},
		{MagicMainnet, "bch-mainnet", false},
		{MagicBSVP2P, "bsv-mainnet", false},
		{MagicRegtest, "bsv-regtest", false},
		{Magic{0xda, 0xb5, 0xbf, 0xfa}, "bch-regtest", false},
		{MagicRegtest, "bch-mainnet", true},
		{MagicMainnet, "bsv-testnet", true},
		{MagicSignet, "signet", false},
		{MagicMainnet, "simnet", true},
		{MagicMainnet, "signet", true},
		// A network or a magic this package does not know: nothing to
		// check against.
		{MagicMainnet, "litecoin", false},
		{Magic{1, 2, 3, 4}, "mainnet", false},
	} {
		err := c.magic.CheckNetwork(c.network)
		if refused := errors.Is(err, ErrOtherNetwork); refused != c.refused || (err != nil && !refused) {
			t.Errorf("%s.CheckNetwork(%q) = %v, want refused %v", c.magic, c.network, err, c.refused)
		}
	}
	err := MagicMainnet.CheckNetwork("testnet")
	if want := "block file of another network: its magic f9beb4d9 is mainnet's, not testnet's"; err == nil || err.Error() != want {
		t.Errorf("the refusal reads %q, want %q", err, want)
	}
}

// TestNetworkMagic: a Bitcoin network's block files carry its P2P message
// start, which btcd's parameters give as the little-endian bytes of Net;
// Bitcoin Cash's and Bitcoin SV's carry Bitcoin's, not their own P2P
// magic.
func TestNetworkMagic(t *testing.T) {
	for _, name := range NetworkNames() {
		n, _ := LookupNetwork(name)
		var p2p Magic
		binary.LittleEndian.PutUint32(p2p[:], uint32(n.Params.Net))
		want := p2p
		if n.Family != Bitcoin {
			want = map[string]Magic{"mainnet": MagicMainnet, "testnet": MagicTestnet3, "regtest": MagicRegtest}[name[4:]]
			if p2p == want {
				t.Errorf("%s: its P2P magic %s is its disk magic", name, p2p)
			}
		}
		got, err := NetworkMagic(name)
		if err != nil || got != want {
			t.Errorf("NetworkMagic(%q) = %s, %v; want %s", name, got, err, want)
		}
	}
	if _, err := NetworkMagic("litecoin"); err == nil {
		t.Error("NetworkMagic of an unknown network succeeded")
	}
}

func TestBlockFileMagic(t *testing.T) {
	dir := t.TempDir()
	framed := filepath.Join(dir, "framed.blk")
	block := asBlock(SerializeTx(bigTx([]byte{0x51}, nil)))
	if err := os.WriteFile(framed, frame(MagicTestnet3, block), 0o644); err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(dir, "raw.bin")
	if err := os.WriteFile(raw, block, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{framed: true, raw: false} {
		bf, err := OpenBlockFile(path)
		if err != nil {
			t.Fatal(err)
		}
		magic, ok := bf.Magic()
		bf.Close()
		if ok != want || (ok && magic != MagicTestnet3) {
			t.Errorf("%s: Magic() = %s, %v", filepath.Base(path), magic, ok)
		}
	}
}

// TestReadBlockGivesTheFilesBytes reads every block of the mainnet file
// with ReadBlock: each Raw is the frame's bytes exactly, and parses to
// the same block.
func TestReadBlockGivesTheFilesBytes(t *testing.T) {
	path := testdata.Path(t, "btc-mainnet-0-14131.blk")
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := OpenBlockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	off := 0
	for blocks := 0; ; blocks++ {
		br, err := bf.Next()
		if err == io.EOF {
			if blocks != btcBlocks {
				t.Fatalf("read %d blocks, want %d", blocks, btcBlocks)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		frameLen := int(binary.LittleEndian.Uint32(file[off+4:]))
		want := file[off+8 : off+8+frameLen]
		off += 8 + frameLen
		b, err := br.ReadBlock()
		if err != nil {
			t.Fatal(err)
		}
		if string(b.Raw) != string(want) || b.Size != int64(len(want)) {
			t.Fatalf("block %d: ReadBlock gives %d bytes (size %d) that differ from the file's %d", blocks, len(b.Raw), b.Size, len(want))
		}
		parsed, err := ParseBlock(b.Raw)
		if err != nil || parsed.Hash != b.Hash || len(parsed.Txs) != len(b.Txs) {
			t.Fatalf("block %d: Raw parses to %v (%v)", blocks, parsed, err)
		}
	}
}
