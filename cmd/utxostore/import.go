package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

const importHelp = `Usage: utxostore import [flags] FILE...

Replays blocks into the store, in order: for each block it creates the
block's transactions, spends their inputs, marks them mined and advances
the height. The store is the one in the data directory (--data), opened on
its own engine and network; a directory that holds none gets a new store
on --engine and --network.

FILE is a Bitcoin Core blk*.dat file (magic + length framing) or a raw
block file (header, transaction count, transactions). A blk*.dat file whose
magic is another network's than the store's (--network) is refused before
any of its blocks is read. Bitcoin Cash and Bitcoin SV nodes (--network
bch-*, bsv-*) write Bitcoin's magics to their block files, which import
takes, and their own P2P magic, which some exporters write; a Bitcoin SV
frame's 64-bit length (a block of 4 GiB or more) is read too. Each block
is held whole while it is imported: a block too large for memory is
followed with sync, which streams it.

The first block of the first file is at --start-height (0: the genesis
block). The genesis coinbase is imported like any other transaction, so its
50 BTC output is counted (Bitcoin Core leaves it out of its UTXO set).

Every block is checked before anything of it is applied: its proof of work
against the network's limit, at height 0 that it is the network's genesis
block (a raw block file carries no magic, so another network's chain is
refused here), its merkle root (refusing the repeated subtree of
CVE-2012-2459), one coinbase and first, no txid twice, and from the
network's BIP34 height the height in the coinbase. A block that fails is
refused with its hash, height, file offset and the check it failed; the
import stops there with a non-zero exit, the store holding the blocks
before it. --trust-blocks skips the proof-of-work, genesis and merkle
checks, for blocks validated already, their network included; it is taken
from the command line only.

An interrupted import resumes: blocks the store already holds are skipped,
after checking that the store's tip is the block at that height in FILE.
With --index, the address index and the block store (DATA/blocks) take
the same blocks; after a crash, what the block store keeps catches the
index up, and the blocks neither holds are read again from FILE, which
must start at or before the first of them. An import into an index that
has blocks already first reads the index's addresses and pay-to-pubkey
outputs, so that it looks up only those (a log line on stderr says so,
and what it read; about a second for three million addresses). With --server the daemon's tip
is the one checked, and sending starts at the height the daemon names as
the next it needs.

With --server ADDR the blocks go to a running daemon over gRPC instead
(ConnectBlock; --tls, --tls-ca and --tls-server-name reach one serving TLS)
and the line below is the daemon's store's.

Progress goes to stderr; the last line on stdout is one JSON object:
  {"blocks":N,"txs":N,"utxos":N,"satoshis":N,"height":N,"digest":"<hex>"}
where utxos and satoshis count unspent outputs and digest is the SHA-256 of
the lines "<txid>:<vout>:<satoshis>\n" of every unspent output, sorted by
txid (as displayed) then vout.

Flags:
`

func runImport(ctx context.Context, args []string) error {
	fs := newFlagSet("import", importHelp)
	var sf storeFlags
	sf.register(fs)
	sf.registerIndex(fs)
	startHeight := fs.Uint("start-height", 0, "height of the first block of the first file")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	every := fs.Int("progress-blocks", 0, "print a progress line every N blocks (instead of a bar on a terminal, or a line every 2 seconds)")
	server := fs.String("server", "", "send the blocks to a running daemon at this gRPC address instead of opening a store")
	token := fs.String("token", "", "with --server, the daemon's bearer token")
	trustBlocks := fs.Bool("trust-blocks", false, "skip the proof-of-work, genesis block and merkle root checks of every block (the structure checks still run): for blocks validated already")
	var tlsFlags clientTLS
	tlsFlags.register(fs)
	if err := parseWithArgs(fs, args, "no block files given"); err != nil {
		return err
	}
	progress := newBlockProgress(os.Stderr, totalSize(fs.Args()), *quiet, *every)
	if *server != "" {
		if *trustBlocks {
			return usagef("--trust-blocks with --server: the daemon checks the blocks it is sent; start its serve with --trust-blocks instead")
		}
		return serverImport(ctx, *server, *token, &tlsFlags, fs.Args(), uint32(*startHeight), progress)
	}
	st, err := sf.openStores(ctx, createStore, pathSettings{trustBlocks: *trustBlocks, bulkIndex: flushEvery, logger: sf.log()})
	if err != nil {
		return err
	}
	imp := &importer{path: st.path, network: sf.network, start: uint32(*startHeight), progress: progress}
	err = imp.importFiles(ctx, fs.Args())
	if err == nil {
		err = st.path.Close() // the index's last blocks, before the summary
	}
	if err == nil {
		err = writeSummary(ctx, st.store, os.Stdout)
	}
	if err != nil {
		// Refused before its first block, an import into a new data
		// directory leaves nothing there.
		return st.fail(ctx, err)
	}
	return st.close()
}

// flushEvery is how many blocks an import's address index holds in memory
// between writes: what an interrupted import indexes again.
const flushEvery = 1000

type importer struct {
	path     *blockpath.Path
	network  string // the store's: block files of another are refused
	start    uint32 // height of the first block of the files
	progress blockProgress
}

// importFiles hands the files' blocks to the path, from the first one it
// needs (blockpath.Path.Next): the blocks below it, which every store
// holds, are skipped unread, once the store's tip is found to be the
// file's block at that height.
func (imp *importer) importFiles(ctx context.Context, paths []string) error {
	store := imp.path.Store()
	tip, haveTip, err := store.Tip(ctx)
	if err != nil {
		return err
	}
	next, err := imp.path.Next(ctx)
	if err != nil {
		return err
	}
	err = forEachBlock(ctx, paths, imp.start, imp.network, func(path string, height uint32, reader *chain.BlockReader) error {
		hash := reader.Info().Hash
		if haveTip && height == tip.Height && hash != tip.Hash {
			return fmt.Errorf("%s: the store's tip at height %d is block %s, but this file has %s there: it holds another chain (use another --data directory)", path, height, tip.Hash, hash)
		}
		if haveTip && height < next {
			return nil // imported before the interruption
		}
		b, err := reader.ReadBlock()
		if err != nil {
			return fmt.Errorf("%s: block %s at height %d: %w", path, hash, height, err)
		}
		err = imp.path.Connect(ctx, b, height)
		var behind *blockpath.BehindError
		switch {
		case errors.As(err, &behind):
			return fmt.Errorf("%s: %w; import files that hold block %d on (--start-height %d or lower)", path, err, behind.Next, behind.Next)
		case errors.As(err, new(*chain.CheckError)):
			return fmt.Errorf("%s: %w", path, reader.Locate(err))
		case err != nil:
			return fmt.Errorf("%s: connecting block %s at height %d: %w", path, hash, height, err)
		}
		imp.progress.block(height, len(b.Txs), b.Size)
		return nil
	})
	if err != nil {
		return err
	}
	imp.progress.done()
	return nil
}

// printSummary opens the existing store read-only and prints its summary
// line.
func printSummary(ctx context.Context, sf storeFlags, w io.Writer) error {
	store, err := sf.open(ctx, readStore)
	if err != nil {
		return err
	}
	defer store.Close()
	return writeSummary(ctx, store, w)
}

func writeSummary(ctx context.Context, store *utxo.DB, w io.Writer) error {
	sum, err := store.Summary(ctx)
	if err != nil {
		return err
	}
	return printSummaryLine(sum, w)
}

// printSummaryLine writes the summary as the one JSON line import ends with.
func printSummaryLine(sum utxo.Summary, w io.Writer) error {
	line, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(line))
	return err
}

func runInfo(ctx context.Context, args []string) error {
	fs := newFlagSet("info", "Usage: utxostore info [flags]\n\nPrints the summary of the store in the data directory, the JSON object\nimport ends with. A data directory that holds no store is refused. The\nstore is opened read-only: nothing in it changes.\n\nFlags:\n")
	var sf storeFlags
	sf.register(fs)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	return printSummary(ctx, sf, os.Stdout)
}

func sortStrings(s []string) { sort.Strings(s) }
