package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/utxostore/utxostore/internal/svpeer"
	"github.com/utxostore/utxostore/utxo"
)

// syncMeasured runs sync to the peer's tip and returns its summary line
// and its peak resident memory in bytes.
func syncMeasured(t *testing.T, args ...string) (utxo.Summary, int64) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(utxostoreBin, append([]string{"sync", "--quiet", "--stop-at-tip"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("utxostore sync %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	usage, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no resource usage of the sync process")
	}
	return parseSummary(t, lines[len(lines)-1]), usage.Maxrss << 10 // KiB on Linux
}

// noStagedBlocks fails t when the block store of data holds a staged
// block.
func noStagedBlocks(t *testing.T, data string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(data, "blocks", "incoming", "*")); len(left) != 0 {
		t.Errorf("staged blocks left: %v", left)
	}
}

// TestSyncFollowsBitcoinSVPeer follows a peer of Bitcoin SV's protocol
// (built on Bitcoin SV's wire package) on bsv-regtest through a large
// block: 5 MB, framed in Bitcoin SV's extended header; with -long also
// 100 MB in a plain header, and 1 GB whose second transaction has
// 1,000,000 outputs, in an extended header, synced with --sozu-tuning
// memory=1GiB in under 3 GiB of memory. The store ends with the digest of
// an import of the same blocks, the large transaction paginated into
// records of 20,000 outputs and stored externally, and no staged block
// left.
func TestSyncFollowsBitcoinSVPeer(t *testing.T) {
	cases := []struct {
		name      string
		size      int64
		outputs   int
		extended  bool
		long      bool
		maxMemory int64 // bytes; 0 for no bound
	}{
		{"5 MB, extended header", 5 << 20, 25_000, true, false, 0},
		{"100 MB", 100 << 20, 150_000, false, true, 0},
		{"1 GB, 1,000,000 outputs, extended header", 1 << 30, 1_000_000, true, true, 3 << 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.long && !*long {
				t.Skip("a block this large runs with -long")
			}
			chain := svpeer.Build(t, t.TempDir(), c.size, c.outputs)
			large, height := chain.Tip()
			peer := &svpeer.Peer{Chain: chain, Extended: map[int32]bool{height: c.extended}}
			addr := peer.Listen(t)
			data := t.TempDir()
			args := []string{"--network", svpeer.Network, "--data", data, "--peer", addr}
			if c.maxMemory > 0 {
				args = append(args, "--sozu-tuning", "memory=1GiB")
			}
			got, rss := syncMeasured(t, args...)
			t.Logf("synced block %s at height %d, %d bytes, %d transactions: peak RSS %d MiB", large.Hash, height, large.Size, large.Txs, rss>>20)
			if c.maxMemory > 0 && rss >= c.maxMemory {
				t.Errorf("peak RSS %d MiB, want under %d MiB", rss>>20, c.maxMemory>>20)
			}
			want := parseSummary(t, lastLine(t, append([]string{"import", "--quiet", "--network", svpeer.Network, "--sync", "block", "--data", t.TempDir()}, chain.Files()...)...))
			if got != want || got.Height != uint32(height) {
				t.Fatalf("after sync:\n got %+v\nwant %+v (import of the same blocks)", got, want)
			}
			noStagedBlocks(t, data)
			sf := storeFlags{data: data}
			store, err := sf.open(context.Background(), readStore)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			meta, err := store.Get(context.Background(), chain.Large, utxo.FieldOutputs)
			if err != nil {
				t.Fatal(err)
			}
			if wantRecords := (c.outputs + 19_999) / 20_000; !meta.External || meta.Records != wantRecords || len(meta.Outputs) != c.outputs {
				t.Errorf("the transaction of %d outputs: external %v, %d records, %d outputs; want external, %d records", c.outputs, meta.External, meta.Records, len(meta.Outputs), wantRecords)
			}
		})
	}
}

// TestSyncBansBitcoinSVPeerSendingBadMessages: a peer that answers the
// request for its large block with a header claiming a terabyte, with the
// block under a wrong checksum, or with an extended header whose command
// is malformed is banned, and the store holds nothing past the block
// before (the chain below is sound: an import of it is the store), no
// staged block left. A sync with --max-block-size below a sound block's
// size refuses it the same way.
func TestSyncBansBitcoinSVPeerSendingBadMessages(t *testing.T) {
	chain := svpeer.Build(t, t.TempDir(), 5<<20, 25_000)
	_, height := chain.Tip()
	below := parseSummary(t, lastLine(t, append([]string{"import", "--quiet", "--network", svpeer.Network, "--sync", "block", "--data", t.TempDir()}, chain.Files()[:height]...)...))
	for _, c := range []struct {
		name  string
		fault svpeer.Fault
		flags []string
		want  string
	}{
		{"a terabyte claimed", svpeer.Oversized, nil, "a block message of 1099511627776 bytes, over the 10737418240 bytes bsv-regtest allows it"},
		{"a wrong checksum", svpeer.BadChecksum, nil, "whose message checksum is wrong"},
		{"a malformed command", svpeer.BadCommand, nil, "a message with a malformed command"},
		{"over --max-block-size", svpeer.Sound, []string{"--max-block-size", "4000000"}, "over the 4000000 bytes bsv-regtest allows it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			peer := &svpeer.Peer{Chain: chain, Faults: map[int32]svpeer.Fault{height: c.fault}}
			data := t.TempDir()
			_, stderr, err := run(t, append([]string{"sync", "--quiet", "--stop-at-tip", "--network", svpeer.Network, "--data", data, "--peer", peer.Listen(t)}, c.flags...)...)
			if err == nil {
				t.Fatal("sync succeeded")
			}
			mustContain(t, "the refusal", stderr, "is banned until", c.want)
			if bans, err := os.ReadFile(banFile(&storeFlags{data: data})); err != nil || !strings.Contains(string(bans), c.want) {
				t.Errorf("the ban file: %s %v", bans, err)
			}
			if got := parseSummary(t, lastLine(t, "info", "--data", data)); got != below {
				t.Errorf("the store after the refusal:\n got %+v\nwant %+v (the chain below the block)", got, below)
			}
			noStagedBlocks(t, data)
		})
	}
}

// TestSyncRefusesANodeOfTheSiblingChain: a follower of bsv-regtest whose
// peer is a Bitcoin Cash node (by its user agent), and one of bch-regtest
// whose peer is a Bitcoin SV node, stop with a message naming the peer's
// chain; neither peer is banned, and nothing reaches the store.
func TestSyncRefusesANodeOfTheSiblingChain(t *testing.T) {
	chain := svpeer.Build(t, t.TempDir(), 5<<20, 25_000)
	for _, c := range []struct{ network, agent, want string }{
		{"bsv-regtest", "/Bitcoin Cash Node:27.1.0/", "follows Bitcoin Cash, not the store's network bsv-regtest"},
		{"bch-regtest", "/Bitcoin SV:1.2.0/", "follows Bitcoin SV, not the store's network bch-regtest"},
	} {
		t.Run(c.network, func(t *testing.T) {
			peer := &svpeer.Peer{Chain: chain, UserAgent: c.agent}
			data := t.TempDir()
			_, stderr, err := run(t, "sync", "--quiet", "--stop-at-tip", "--network", c.network, "--data", data, "--peer", peer.Listen(t))
			if err == nil {
				t.Fatal("sync succeeded")
			}
			mustContain(t, "the refusal", stderr, c.want, c.agent)
			if strings.Contains(stderr, "banned") {
				t.Errorf("the peer was banned:\n%s", stderr)
			}
			if _, err := os.Stat(banFile(&storeFlags{data: data})); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a ban file was written: %v", err)
			}
			if peer.Connections() != 1 {
				t.Errorf("%d connections to a peer of the other chain, want 1", peer.Connections())
			}
			// The refusal came before the first block: the data
			// directory is left as it was, empty.
			if entries, err := os.ReadDir(data); err != nil || len(entries) != 0 {
				t.Errorf("the refused sync left %v in its data directory (%v)", entries, err)
			}
		})
	}
}
