package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/client"
	"github.com/utxostore/utxostore/internal/damage"
	"github.com/utxostore/utxostore/internal/testdata"
)

// damagedHeight is a mainnet block of six transactions: one that spends
// can be damaged, and repeating its last pair keeps the merkle root
// (CVE-2012-2459).
const damagedHeight = 2812

// mainnetPrefix returns the blk*.dat frames of the mainnet file's first n
// blocks, the last of those frames, and the raw block n.
func mainnetPrefix(t *testing.T, n int) (frames, last, block []byte) {
	t.Helper()
	data, err := os.ReadFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	lastOff, off := 0, 0
	for range n {
		lastOff = off
		off += 8 + int(binary.LittleEndian.Uint32(data[off+4:]))
	}
	size := int(binary.LittleEndian.Uint32(data[off+4:]))
	return data[:off], data[lastOff:off], data[off+8 : off+8+size]
}

// writeFramed writes frames followed by block in its own frame.
func writeFramed(t *testing.T, path string, frames, block []byte) {
	t.Helper()
	out := append([]byte(nil), frames...)
	out = append(out, chain.MagicMainnet[:]...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(block)))
	if err := os.WriteFile(path, append(out, block...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// damagedCases are the damaged copies of block, the CVE-2012-2459
// repetition last.
func damagedCases(t *testing.T, block []byte) []damage.Case {
	t.Helper()
	cases, err := damage.Flips(block)
	if err != nil {
		t.Fatal(err)
	}
	cve, err := damage.RepeatTrailingPair(block)
	if err != nil {
		t.Fatal(err)
	}
	return append(cases, cve)
}

func blockHash(t *testing.T, raw []byte) string {
	t.Helper()
	blk, err := chain.ParseBlock(raw)
	if err != nil {
		t.Fatal(err)
	}
	return blk.Hash.String()
}

// importPrefix imports the blocks before damagedHeight into a new store
// and returns its flags and its summary line.
func importPrefix(t *testing.T, frames []byte) (store []string, summary string) {
	t.Helper()
	dir := t.TempDir()
	prefix := filepath.Join(dir, "prefix.blk")
	if err := os.WriteFile(prefix, frames, 0o644); err != nil {
		t.Fatal(err)
	}
	store = []string{"--data", filepath.Join(dir, "data"), "--sync", "block"}
	summary = lastLine(t, append(append([]string{"import", "--quiet"}, store...), prefix)...)
	if !strings.Contains(summary, fmt.Sprintf(`"height":%d,`, damagedHeight-1)) {
		t.Fatalf("importing the blocks before %d: %s", damagedHeight, summary)
	}
	return store, summary
}

// TestImportRefusesDamagedBlocks imports the real blocks 2811 and 2812,
// the second damaged one region at a time, into a store that holds the
// blocks to 2811: each import exits 1 naming the check, the block's hash,
// its height and its frame's file offset, and the store is as it was. The
// undamaged file then imports.
func TestImportRefusesDamagedBlocks(t *testing.T) {
	frames, last, block := mainnetPrefix(t, damagedHeight)
	store, before := importPrefix(t, frames)
	file := filepath.Join(t.TempDir(), "damaged.blk")
	importFile := append(append([]string{"import", "--quiet", "--start-height", fmt.Sprint(damagedHeight - 1)}, store...), file)
	for _, c := range damagedCases(t, block) {
		writeFramed(t, file, last, c.Block)
		_, stderr, err := run(t, importFile...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%s: want exit status 1, got %v:\n%s", c.Region, err, stderr)
		}
		mustContain(t, c.Region, stderr,
			fmt.Sprintf("fails the %s check", c.Check), c.Reason, blockHash(t, c.Block),
			fmt.Sprintf("at height %d", damagedHeight), fmt.Sprintf("file offset %d", len(last)))
		if after := lastLine(t, append([]string{"info"}, store...)...); after != before {
			t.Fatalf("%s: the refused block changed the store:\nbefore %s\nafter  %s", c.Region, before, after)
		}
	}
	writeFramed(t, file, last, block)
	summary := lastLine(t, importFile...)
	mustContain(t, "import of the undamaged blocks", summary, fmt.Sprintf(`"blocks":%d,`, damagedHeight+1))
}

// TestImportTrustBlocks: --trust-blocks skips the proof-of-work and merkle
// checks, not the structure; a config file cannot set it for serve, and
// import sent to a daemon refuses it (the daemon checks).
func TestImportTrustBlocks(t *testing.T) {
	frames, last, block := mainnetPrefix(t, damagedHeight)
	store, before := importPrefix(t, frames)
	cases := map[string]damage.Case{}
	for _, c := range damagedCases(t, block) {
		cases[c.Region] = c
	}
	file := filepath.Join(t.TempDir(), "damaged.blk")
	trusted := append(append([]string{"import", "--quiet", "--trust-blocks", "--start-height", fmt.Sprint(damagedHeight - 1)}, store...), file)

	writeFramed(t, file, last, cases["coinbase previous output index"].Block)
	if _, stderr, err := run(t, trusted...); err == nil || !strings.Contains(stderr, "fails the coinbase check") {
		t.Errorf("a block without a coinbase with --trust-blocks: want the coinbase check, got %v:\n%s", err, stderr)
	}
	if after := lastLine(t, append([]string{"info"}, store...)...); after != before {
		t.Fatalf("the refused block changed the store:\nbefore %s\nafter  %s", before, after)
	}
	writeFramed(t, file, last, cases["coinbase script"].Block)
	if _, stderr, err := run(t, trusted...); err != nil {
		t.Errorf("a block whose merkle root is wrong, with --trust-blocks: want it applied, got %v:\n%s", err, stderr)
	}

	if _, stderr, err := run(t, "import", "--trust-blocks", "--server", "127.0.0.1:1", file); err == nil || !strings.Contains(stderr, "start its serve with --trust-blocks") {
		t.Errorf("import --trust-blocks --server: want a refusal, got %v:\n%s", err, stderr)
	}
	config := filepath.Join(t.TempDir(), "utxostore.json")
	writeFile(t, config, `{"trust-blocks": true}`)
	if _, stderr, err := run(t, "config", "--config", config); err == nil || !strings.Contains(stderr, "command line only") {
		t.Errorf("trust-blocks in a config file: want a refusal, got %v:\n%s", err, stderr)
	}
}

// TestServeConnectBlockRefusesDamagedBlocks sends the same damaged blocks
// to a daemon's ConnectBlock: each is refused with InvalidArgument naming
// the check, the block and its height (import --server adds its file
// offset), and the store is as it was. A
// daemon started with --trust-blocks still refuses a block without a
// coinbase, and applies one whose merkle root is wrong.
func TestServeConnectBlockRefusesDamagedBlocks(t *testing.T) {
	frames, last, block := mainnetPrefix(t, damagedHeight)
	store, before := importPrefix(t, frames)
	serve := append([]string{"serve", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, store...)
	ctx := context.Background()
	connect := func(d *daemon, raw []byte) error {
		t.Helper()
		c, err := client.Dial(d.grpc, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _, err = c.ConnectBlock(ctx, raw, damagedHeight)
		return err
	}

	d := startDaemon(t, serve...)
	cases := map[string]damage.Case{}
	for _, c := range damagedCases(t, block) {
		cases[c.Region] = c
		err := connect(d, c.Block)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", c.Region, err)
			continue
		}
		mustContain(t, c.Region, err.Error(), fmt.Sprintf("fails the %s check", c.Check), c.Reason,
			blockHash(t, c.Block), fmt.Sprintf("at height %d", damagedHeight))
	}
	// import --server names the file offset of the block the daemon refused.
	file := filepath.Join(t.TempDir(), "damaged.blk")
	writeFramed(t, file, last, cases["output script"].Block)
	_, stderr, err := run(t, "import", "--quiet", "--server", d.grpc, "--start-height", fmt.Sprint(damagedHeight-1), file)
	if err == nil {
		t.Error("import --server of a damaged block: want a failure")
	}
	mustContain(t, "import --server", stderr, "fails the merkle root check", fmt.Sprintf("file offset %d", len(last)))
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, d.log())
	}
	if after := lastLine(t, append([]string{"info"}, store...)...); after != before {
		t.Fatalf("the refused blocks changed the store:\nbefore %s\nafter  %s", before, after)
	}

	d = startDaemon(t, append(serve, "--trust-blocks")...)
	defer d.stop(t, syscall.SIGTERM)
	if err := connect(d, cases["coinbase previous output index"].Block); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "fails the coinbase check") {
		t.Errorf("a block without a coinbase to a daemon with --trust-blocks: want the coinbase check, got %v", err)
	}
	if err := connect(d, cases["coinbase script"].Block); err != nil {
		t.Errorf("a block whose merkle root is wrong to a daemon with --trust-blocks: want it applied, got %v", err)
	}
}
