package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/client"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/internal/fsutil"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/snapshot"
	"github.com/utxostore/utxostore/snapshot/core"
	"github.com/utxostore/utxostore/snapshot/teranode"
	"github.com/utxostore/utxostore/utxo"
)

const snapshotHelp = `Usage: utxostore snapshot dump|load|diffs [flags] ARG

The UTXO set as a file, in Bitcoin Core's format (dumptxoutset, version 2)
or Teranode's (its utxopersister's files).

  utxostore snapshot dump --format core|teranode --data DIR OUT
  utxostore snapshot load --format core|teranode --data NEW FILE
  utxostore snapshot diffs --format teranode --from A --to B --blocks FILE OUTDIR

A snapshot holds the set Bitcoin Core holds at the same block: the
unspent outputs of the longest chain, less the genesis block's coinbase
and the outputs no script can spend (a script that starts with OP_RETURN
or is longer than 10,000 bytes). dump and load end with one JSON line of
the set's statistics under the names of Core's RPC (gettxoutsetinfo):
txouts, total_amount (in satoshis, where Core prints bitcoins),
hash_serialized_3 and muhash.

Run 'utxostore snapshot COMMAND -h' for a command's flags.
`

func runSnapshot(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(os.Stderr, snapshotHelp)
		if len(args) == 0 {
			return usagef("snapshot: name a command: dump, load or diffs")
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "dump":
		return runSnapshotDump(ctx, args[1:])
	case "load":
		return runSnapshotLoad(ctx, args[1:])
	case "diffs":
		return runSnapshotDiffs(ctx, args[1:])
	}
	return usagef("snapshot: unknown command %q: use dump, load or diffs", args[0])
}

// The formats.
const (
	formatCore     = "core"
	formatTeranode = "teranode"
)

func checkFormat(format string, allowed ...string) error {
	for _, f := range allowed {
		if format == f {
			return nil
		}
	}
	return usagef("--format %q: use %s", format, strings.Join(allowed, " or "))
}

// snapshotResult is the JSON line dump and load end with.
type snapshotResult struct {
	Format     string `json:"format"`
	Path       string `json:"path"`
	BaseHash   string `json:"base_hash"`
	BaseHeight uint32 `json:"base_height"`
	coinstats.Summary
}

// printJSONLine prints v as one line of JSON on stdout.
func printJSONLine(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Println(string(line))
	return err
}

const snapshotDumpHelp = `Usage: utxostore snapshot dump --format core|teranode [flags] OUT

Writes the UTXO set of the store in the data directory (--data), at its
tip, as a snapshot. The store is opened read-only, so it must not be in
use: stop the daemon first, or dump from it with --server ADDR, which
streams the set at the daemon's tip while it serves (blocks wait while it
streams; its --token, if any, is needed). Either way the file is written
here, the same bytes for the same set, and the coins are checked against
the statistics the store keeps at its tip: a store stopped inside a block
is refused until that block is connected again.

--format core writes the file OUT in Bitcoin Core's dumptxoutset format,
version 2, its coins in the order Core writes them (that of its coins
database). It does not say the block's height: give it to load.

--format teranode writes, in the directory OUT (created if need be),
Teranode's <tip hash>.utxo-set and <tip hash>.utxo-headers, each with its
.sha256 sidecar. The headers need every block's header from the genesis
block on, which a store loaded from a snapshot lacks.

Each file is written under a temporary name beside it, .NAME.partial-<digits>,
and renamed into place once whole (a Teranode set file last): nothing is
left behind by a dump that fails, and what a killed dump left is removed
by the next dump to the same file. The last line on stdout is
one JSON object: format, path, base_hash, base_height, txouts,
total_amount, hash_serialized_3 and muhash.

Flags:
`

// errEmptySet refuses a dump of a store that holds no block.
var errEmptySet = fmt.Errorf("%w: there is no set to dump", server.ErrNoBlock)

func runSnapshotDump(ctx context.Context, args []string) error {
	fs := newFlagSet("snapshot dump", snapshotDumpHelp)
	var sf storeFlags
	sf.register(fs)
	format := fs.String("format", "", "snapshot format: core or teranode")
	addr := fs.String("server", "", "gRPC address of a running daemon to dump from, instead of --data")
	token := fs.String("token", "", "the daemon's bearer token (--server)")
	var tlsFlags clientTLS
	tlsFlags.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFormat(*format, formatCore, formatTeranode); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("snapshot dump: give one OUT, the file (core) or directory (teranode) to write")
	}
	if *addr != "" && flagGiven(fs, "data") {
		return usagef("snapshot dump: give --data (a stopped store) or --server (a running daemon), not both")
	}
	out := fs.Arg(0)
	var src setSource
	if *addr != "" {
		src = &daemonSet{addr: *addr, token: *token, tls: &tlsFlags}
	} else {
		src = &storeSet{sf: &sf}
	}
	withHeaders := *format == formatTeranode
	if err := src.open(ctx, withHeaders); err != nil {
		return err
	}
	defer src.close()

	// The set, in outpoint order: the store walks its records in the
	// engine's order.
	tmpDir := filepath.Dir(out)
	if *format == formatTeranode {
		tmpDir = out
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
	}
	sorter := snapshot.NewSorter(tmpDir, snapshot.DefaultSortMemory)
	defer sorter.Close()
	tip, headers, err := src.walk(ctx, sorter.Add)
	if err != nil {
		return err
	}
	kept, err := src.stats(ctx)
	if err != nil {
		return err
	}
	result := snapshotResult{Format: *format, BaseHash: tip.Hash.String(), BaseHeight: tip.Height}
	if *format == formatCore {
		result.Path = out
		result.Summary, err = dumpCore(out, src.network(), tip, sorter, kept)
	} else {
		result.Path = filepath.Join(out, tip.Hash.String()+teranode.ExtSet)
		result.Summary, err = dumpTeranode(out, tip, headers, sorter, kept)
	}
	if err != nil {
		return err
	}
	return printJSONLine(result)
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// setSource is where a dump reads the set: a stopped store's data
// directory or a running daemon.
type setSource interface {
	// open refuses, before anything is written, a source that has no set
	// to dump (or, withHeaders, lacks the chain's headers).
	open(ctx context.Context, withHeaders bool) error
	// walk calls coin with every coin of the set at one tip, in no
	// particular order, and returns the tip and, withHeaders, the chain's
	// headers from the genesis block to it.
	walk(ctx context.Context, coin func(*coinstats.Coin) error) (utxo.Tip, []teranode.BlockIndex, error)
	// stats returns the statistics the store keeps of the set at the tip
	// walked, for the dump to check its coins against; nil when the
	// source keeps none apart from the coins it sends.
	stats(ctx context.Context) (*coinstats.Summary, error)
	network() string
	close() error
}

// storeSet is the set of a stopped store, opened read-only.
type storeSet struct {
	sf      *storeFlags
	store   *utxo.DB
	tip     utxo.Tip
	headers []teranode.BlockIndex
}

func (s *storeSet) open(ctx context.Context, withHeaders bool) error {
	var err error
	if s.store, err = s.sf.open(ctx, readStore); err != nil {
		return err
	}
	tip, ok, err := s.store.Tip(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w", s.sf.data, errEmptySet)
	}
	s.tip = tip
	if withHeaders {
		s.headers, err = chainHeaders(ctx, s.store, tip)
	}
	return err
}

func (s *storeSet) walk(ctx context.Context, coin func(*coinstats.Coin) error) (utxo.Tip, []teranode.BlockIndex, error) {
	err := s.store.ForEachCoin(ctx, func(c *coinstats.Coin) error {
		if !c.InSet() {
			return nil
		}
		return coin(c)
	})
	return s.tip, s.headers, err
}

func (s *storeSet) stats(ctx context.Context) (*coinstats.Summary, error) {
	kept, err := s.store.SetStats(ctx)
	return &kept, err
}

func (s *storeSet) network() string { return s.sf.network }

func (s *storeSet) close() error {
	if s.store == nil {
		return nil
	}
	return s.store.Close()
}

// daemonSet is the set a running daemon streams (client.DumpCoins).
type daemonSet struct {
	addr, token string
	tls         *clientTLS
	c           *client.Client
	net         string
	withHeaders bool
}

func (d *daemonSet) open(ctx context.Context, withHeaders bool) error {
	var err error
	if d.c, err = dial(d.addr, d.token, d.tls); err != nil {
		return err
	}
	info, err := d.c.Info(ctx)
	if err != nil {
		return err
	}
	if info.Tip == nil {
		return fmt.Errorf("the daemon at %s: %w", d.addr, errEmptySet)
	}
	d.net, d.withHeaders = info.Network, withHeaders
	return nil
}

func (d *daemonSet) walk(ctx context.Context, coin func(*coinstats.Coin) error) (tip utxo.Tip, headers []teranode.BlockIndex, err error) {
	err = d.c.DumpCoins(ctx, d.withHeaders,
		func(t utxo.Tip) error { tip = t; return nil },
		coin,
		func(h teranode.BlockIndex) error { headers = append(headers, h); return nil })
	if err == nil && d.withHeaders && uint32(len(headers)) != tip.Height+1 {
		err = fmt.Errorf("the daemon sent %d headers for a chain of %d blocks", len(headers), tip.Height+1)
	}
	return tip, headers, err
}

// stats is nil: the daemon streams its coins from one consistent view of
// its store, whose tip may have moved on when the stream ends, and holds
// them to its kept statistics at that view itself (daemonSnapshots).
func (d *daemonSet) stats(context.Context) (*coinstats.Summary, error) { return nil, nil }

func (d *daemonSet) network() string { return d.net }

func (d *daemonSet) close() error {
	if d.c == nil {
		return nil
	}
	return d.c.Close()
}

// eachTx calls fn with the sorter's coins a transaction at a time, and
// counts every coin into walk.
func eachTx(sorter *snapshot.Sorter, walk *coinstats.Walk, fn func([]coinstats.Coin) error) error {
	var group []coinstats.Coin
	err := sorter.Each(func(c *coinstats.Coin) error {
		if err := walk.Add(c); err != nil {
			return err
		}
		if len(group) > 0 && group[0].TxID != c.TxID {
			if err := fn(group); err != nil {
				return err
			}
			group = group[:0]
		}
		own := *c
		own.Script = append([]byte(nil), c.Script...)
		group = append(group, own)
		return nil
	})
	if err != nil || len(group) == 0 {
		return err
	}
	return fn(group)
}

// matchesKept refuses a dump whose coins are not the set the store's
// statistics, kept block by block, describe at its tip (kept, when the
// source keeps them). A store stopped by a crash inside a block holds
// that block's first writes, which the walk cannot tell from the tip's
// set until the block is connected again; no file is left of such a dump.
func matchesKept(dumped coinstats.Summary, kept *coinstats.Summary) error {
	if kept == nil || (dumped.TxOuts == kept.TxOuts && dumped.TotalAmount == kept.TotalAmount && dumped.MuHash == kept.MuHash) {
		return nil
	}
	return fmt.Errorf("the store's coins (txouts %d, total_amount %d, muhash %s) are not the set its statistics describe at its tip (txouts %d, total_amount %d, muhash %s): "+
		"if the store was stopped inside a block, connect that block again (import or sync) and dump then; otherwise run utxostore verify",
		dumped.TxOuts, dumped.TotalAmount, dumped.MuHash, kept.TxOuts, kept.TotalAmount, kept.MuHash)
}

// dumpCore writes the sorted set to the file out, created beside it under
// a temporary name and renamed into place once whole and matching kept
// (matchesKept).
func dumpCore(out, network string, tip utxo.Tip, sorter *snapshot.Sorter, kept *coinstats.Summary) (coinstats.Summary, error) {
	magic, err := chain.NetworkMagic(network)
	if err != nil {
		return coinstats.Summary{}, err
	}
	if _, err := os.Lstat(out); err == nil {
		return coinstats.Summary{}, usagef("%s exists: a dump writes a new file", out)
	}
	if err := removeKilledDumps(out); err != nil {
		return coinstats.Summary{}, err
	}
	f, err := fsutil.CreatePartial(out)
	if err != nil {
		return coinstats.Summary{}, err
	}
	defer os.Remove(f.Name()) // once renamed, there is nothing to remove
	defer f.Close()
	w, err := core.NewWriter(f, core.Header{Network: magic, BaseHash: tip.Hash, Coins: sorter.Count()})
	if err != nil {
		return coinstats.Summary{}, err
	}
	var walk coinstats.Walk
	if err := eachTx(sorter, &walk, w.WriteTx); err != nil {
		return coinstats.Summary{}, err
	}
	if err := w.Close(); err != nil {
		return coinstats.Summary{}, err
	}
	sum := walk.Finalize()
	if err := matchesKept(sum, kept); err != nil {
		return sum, err
	}
	return sum, fsutil.PlacePartial(f, out)
}

// removeKilledDumps removes the temporary files that dumps to the files
// paths left when killed or crashed (fsutil.PartialPrefix): a dump removes
// its own when it fails, so one still there is a dead dump's, part of a
// file nothing will read. Only names of paths' own pattern go; two dumps
// to one file at once are not supported, as only one could rename its
// file there.
func removeKilledDumps(paths ...string) error {
	for _, path := range paths {
		if err := fsutil.RemoveTemps(filepath.Dir(path), fsutil.PartialPrefix(path)); err != nil {
			return fmt.Errorf("removing what a dump to %s that did not end left: %w", path, err)
		}
	}
	return nil
}

// dumpTeranode writes the headers file and the set file in dir, each under
// a temporary name until both are whole and the set matches kept
// (matchesKept). The set file is renamed into place last: a headers file
// without the set file of its block is what a dump killed between the two
// renames left, and is replaced.
func dumpTeranode(dir string, tip utxo.Tip, headers []teranode.BlockIndex, sorter *snapshot.Sorter, kept *coinstats.Summary) (sum coinstats.Summary, err error) {
	base := filepath.Join(dir, tip.Hash.String())
	if err := removeKilledDumps(base+teranode.ExtHeaders, base+teranode.ExtSet); err != nil {
		return sum, err
	}
	if _, err := os.Lstat(base + teranode.ExtSet); errors.Is(err, os.ErrNotExist) {
		for _, name := range []string{base + teranode.ExtHeaders, base + teranode.ExtHeaders + teranode.ExtSidecar} {
			if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				return sum, err
			}
		}
	}
	hf, err := teranode.Create(base + teranode.ExtHeaders)
	if err != nil {
		return sum, err
	}
	sf, err := teranode.Create(base + teranode.ExtSet)
	if err != nil {
		hf.Abort()
		return sum, err
	}
	defer func() {
		if err != nil {
			hf.Abort()
			sf.Abort()
			os.Remove(base + teranode.ExtHeaders + teranode.ExtSidecar)
			os.Remove(base + teranode.ExtSet + teranode.ExtSidecar)
		}
	}()
	hw, err := teranode.NewHeadersWriter(hf, tip.Hash, tip.Height)
	if err != nil {
		return sum, err
	}
	for i := range headers {
		if err := hw.Write(&headers[i]); err != nil {
			return sum, err
		}
	}
	setHeader := teranode.SetHeader{BlockHash: tip.Hash, Height: tip.Height}
	if tip.Height > 0 {
		setHeader.PrevHash = headers[tip.Height].Header.PrevBlock
	}
	w, err := teranode.NewSetWriter(sf, setHeader)
	if err != nil {
		return sum, err
	}
	var walk coinstats.Walk
	if err := eachTx(sorter, &walk, w.WriteTx); err != nil {
		return sum, err
	}
	if err := w.Close(); err != nil {
		return sum, err
	}
	sum = walk.Finalize()
	if err := matchesKept(sum, kept); err != nil {
		return sum, err
	}
	if err := hf.Close(); err != nil {
		return sum, err
	}
	return sum, sf.Close()
}

// chainHeaders returns the blocks of the store's chain from the genesis
// block to tip, with their headers as the store kept them.
func chainHeaders(ctx context.Context, store *utxo.DB, tip utxo.Tip) ([]teranode.BlockIndex, error) {
	headers := make([]teranode.BlockIndex, 0, tip.Height+1)
	for h := uint32(0); h <= tip.Height; h++ {
		b, ok, err := store.BlockAt(ctx, h)
		if err != nil {
			return nil, err
		}
		header := wire.BlockHeader{Version: b.Version, PrevBlock: b.PrevHash, MerkleRoot: b.MerkleRoot,
			Timestamp: time.Unix(b.Time, 0), Bits: b.Bits, Nonce: b.Nonce}
		if !ok || header.BlockHash() != b.Hash {
			return nil, fmt.Errorf("the store has no header of the block at height %d (it was loaded from a snapshot above it, or connected without its header), and a teranode snapshot holds every header from the genesis block: dump --format core instead", h)
		}
		headers = append(headers, teranode.BlockIndex{Hash: b.Hash, Height: h, TxCount: uint64(b.Txs), Header: header})
	}
	return headers, nil
}

const snapshotLoadHelp = `Usage: utxostore snapshot load --format core|teranode --data NEW [flags] FILE

Creates a store in the data directory NEW (which must not exist, or be
empty) holding the UTXO set of the snapshot FILE, at the snapshot's block:
the store's tip is that block, and blocks connected after it (import,
sync) spend the loaded coins like any other. A loaded transaction is known
by its unspent outputs alone.

--format core reads Bitcoin Core's dumptxoutset file (version 2) of the
store's --network; it does not say its block's height (give --height)
nor how many transactions the chain holds (info's txs then counts those
of the blocks connected after it).
--format teranode reads Teranode's <hash>.utxo-set file; its .sha256
sidecar, when there, must agree, and its <hash>.utxo-headers beside it,
when there, must start at the --network's genesis block and end at the
same block (the store then counts the chain's transactions from it). The
set file does not say its network: without the headers file, a set of
another network is not found out.

The store is built in a temporary directory beside NEW and moved into
place only once the whole file has been read and, with --expect-hash, its
hash_serialized_3 found equal: a file that is truncated, corrupt, of
another network or version, or of another hash leaves no store behind.
A load killed before its end leaves its temporary directory,
.NEW.loading-<digits>, which the next load into NEW removes. Engines sozu
and pebble.

The last line on stdout is one JSON object as dump prints it, of the set
loaded.

Flags:
`

func runSnapshotLoad(ctx context.Context, args []string) error {
	fs := newFlagSet("snapshot load", snapshotLoadHelp)
	var sf storeFlags
	sf.register(fs)
	format := fs.String("format", "", "snapshot format: core or teranode")
	height := fs.Int64("height", -1, "height of the snapshot's block (needed for core, whose file does not say it; checked against a teranode file's)")
	expect := fs.String("expect-hash", "", "hash_serialized_3 the set must have (hex, as Core prints it); another refuses the load")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFormat(*format, formatCore, formatTeranode); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("snapshot load: give one FILE, the snapshot to load")
	}
	if *format == formatCore && *height < 0 {
		return usagef("snapshot load --format core: give --height, the height of the snapshot's block (Core's file does not say it)")
	}
	if *height > 1<<32-1 {
		return usagef("--height %d: above the highest block height", *height)
	}
	if sf.engine == "" {
		sf.engine = defaultEngine
	}
	if !keepsDataInDir(sf.engine) {
		return usagef("snapshot load builds the store in a directory and moves it into place once it is whole: use engine %s", strings.Join(dirEngines, " or "))
	}
	if err := checkNewDataDir(sf.data); err != nil {
		return err
	}
	if err := removeKilledLoads(sf.data); err != nil {
		return err
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()

	// The store is built beside NEW and moved there once whole.
	final := sf.data
	tmp, err := os.MkdirTemp(filepath.Dir(final), loadingPrefix(final)+"*")
	if err != nil {
		return err
	}
	building := sf
	building.data, building.sync = tmp, "block" // made durable once, at its end
	store, err := building.open(ctx, createStore)
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	l := &loader{store: store, network: building.network, file: fs.Arg(0), height: *height}
	if *format == formatCore {
		err = l.loadCore(ctx, f)
	} else {
		err = l.loadTeranode(ctx, f)
	}
	if err == nil && *expect != "" && !strings.EqualFold(*expect, l.result.HashSerialized3) {
		err = &hashMismatchError{Expected: *expect, Found: l.result.HashSerialized3}
	}
	if err == nil {
		err = l.load.Finish(ctx)
	}
	err = errors.Join(err, store.Close())
	if err == nil {
		err = moveIntoPlace(tmp, final)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	l.result.Path = final
	return printJSONLine(l.result)
}

// loadingPrefix starts the name of the temporary directory a load into
// final builds its store in, beside final; os.MkdirTemp ends it with
// digits.
func loadingPrefix(final string) string { return "." + filepath.Base(final) + ".loading-" }

// removeKilledLoads removes the temporary directories that loads into
// final left when killed or crashed: a load removes its own when it
// fails, so one still there is a dead load's, an incomplete store nothing
// will use. Only names of final's own pattern go; two loads into one
// directory at once are not supported, as only one could move its store
// there.
func removeKilledLoads(final string) error {
	if err := fsutil.RemoveTemps(filepath.Dir(final), loadingPrefix(final)); err != nil {
		return fmt.Errorf("removing what a load into %s that did not end left: %w", final, err)
	}
	return nil
}

// checkNewDataDir refuses a data directory that holds anything.
func checkNewDataDir(path string) error {
	dir, err := readDataDir(path)
	if err != nil {
		return err
	}
	if dir.engine != "" {
		return usagef("data directory %s holds a %s store already: a snapshot loads into a new data directory", path, dir.engine)
	}
	if entries, err := os.ReadDir(path); err == nil && len(entries) > 0 {
		return usagef("data directory %s is not empty: a snapshot loads into a new data directory", path)
	}
	return nil
}

// moveIntoPlace renames the built store's directory tmp to final (an
// empty directory there is replaced) and makes the rename durable.
func moveIntoPlace(tmp, final string) error {
	if err := os.Remove(final); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replacing the empty data directory %s: %w", final, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return fsutil.SyncDir(filepath.Dir(final))
}

// hashMismatchError: the loaded set's hash_serialized_3 is not the one
// --expect-hash gave.
type hashMismatchError struct{ Expected, Found string }

func (e *hashMismatchError) Error() string {
	return fmt.Sprintf("the snapshot's hash_serialized_3 is %s, not the expected %s: nothing was loaded", e.Found, e.Expected)
}

// loader reads a snapshot file into a store.
type loader struct {
	store   *utxo.DB
	network string
	file    string
	height  int64 // -1 when not given
	load    *utxo.SnapshotLoader
	result  snapshotResult
}

// start begins the load at the snapshot's block.
func (l *loader) start(ctx context.Context, format string, base utxo.SnapshotBase) error {
	var err error
	l.load, err = l.store.LoadSnapshot(ctx, base)
	l.result = snapshotResult{Format: format, BaseHash: base.Hash.String(), BaseHeight: base.Height}
	return err
}

// loadCoins loads into the store every coin next reads, until io.EOF,
// handing each to each first (the hash of the set as it is read).
func (l *loader) loadCoins(ctx context.Context, next func() ([]coinstats.Coin, error), each func(*coinstats.Coin) error) error {
	for {
		coins, err := next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range coins {
			if err := each(&coins[i]); err != nil {
				return err
			}
		}
		if err := l.load.Add(ctx, coins); err != nil {
			return err
		}
	}
}

func (l *loader) loadCore(ctx context.Context, f io.Reader) error {
	r, err := core.NewReader(f, l.network)
	if err != nil {
		return err
	}
	if err := l.start(ctx, formatCore, utxo.SnapshotBase{Hash: r.Header().BaseHash, Height: uint32(l.height)}); err != nil {
		return err
	}
	// Core writes its coins in outpoint order: hash_serialized_3 is taken
	// as they come, beside the statistics the loader keeps for the store.
	var serialized coinstats.Serialized
	err = l.loadCoins(ctx, r.Next, func(c *coinstats.Coin) error {
		if err := serialized.Add(c); err != nil {
			return fmt.Errorf("%s: %w", l.file, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	l.result.Summary = l.load.Summary()
	l.result.HashSerialized3 = serialized.Sum()
	return nil
}

func (l *loader) loadTeranode(ctx context.Context, f io.Reader) error {
	r, err := teranode.NewSetReader(f)
	if err != nil {
		return err
	}
	h := r.Header()
	if l.height >= 0 && uint32(l.height) != h.Height {
		return usagef("--height %d, but %s is the set after block %s at height %d", l.height, l.file, h.BlockHash, h.Height)
	}
	txs, err := l.teranodeHeaders(h)
	if err != nil {
		return err
	}
	if err := l.start(ctx, formatTeranode, utxo.SnapshotBase{Hash: h.BlockHash, Height: h.Height, Txs: txs}); err != nil {
		return err
	}
	// Teranode's set is in no set order: the coins are sorted for
	// hash_serialized_3 as they are loaded.
	sorter := snapshot.NewSorter(filepath.Dir(l.file), snapshot.DefaultSortMemory)
	defer sorter.Close()
	if err := l.loadCoins(ctx, r.Next, sorter.Add); err != nil {
		return err
	}
	if _, err := teranode.CheckSidecar(l.file, r.Sum()); err != nil {
		return err
	}
	var serialized coinstats.Serialized
	if err := sorter.Each(serialized.Add); err != nil {
		return err
	}
	l.result.Summary = l.load.Summary()
	l.result.HashSerialized3 = serialized.Sum()
	return nil
}

// teranodeHeaders reads the headers file beside the set file, when there,
// checks it ends at the set's block and returns the chain's transaction
// count; 0 without one.
func (l *loader) teranodeHeaders(set teranode.SetHeader) (uint64, error) {
	path := filepath.Join(filepath.Dir(l.file), set.BlockHash.String()+teranode.ExtHeaders)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := teranode.NewHeadersReader(f, l.network)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if last, height := r.Last(); last != set.BlockHash || height != set.Height {
		return 0, fmt.Errorf("%s ends at block %s at height %d, the set is after block %s at height %d", path, last, height, set.BlockHash, set.Height)
	}
	var txs uint64
	var prev chainhash.Hash
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		txs += b.TxCount
		prev = b.Header.PrevBlock
	}
	if set.Height > 0 && prev != set.PrevHash {
		return 0, fmt.Errorf("%s has block %s follow %s, the set says %s", path, set.BlockHash, prev, set.PrevHash)
	}
	if _, err := teranode.CheckSidecar(path, r.Sum()); err != nil {
		return 0, err
	}
	return txs, nil
}

const snapshotDiffsHelp = `Usage: utxostore snapshot diffs --format teranode --from A --to B (--blocks FILE | --data DIR) [flags] OUTDIR

Writes, for each block from height A to B, Teranode's
<hash>.utxo-additions and <hash>.utxo-deletions in OUTDIR (created if need
be), each with its .sha256 sidecar, as Teranode's utxopersister writes
them: the outputs each transaction adds (those Teranode stores as UTXOs)
and the outpoints each spends, in block order. The blocks come from FILE, a
blk*.dat or raw block file whose first block is at --start-height, or from
the block store of the stopped store in DIR (kept with --index, or by a
follower), which must hold the store's blocks from A to B.

Prints one JSON line per block: height, hash and the two files.

Flags:
`

func runSnapshotDiffs(ctx context.Context, args []string) error {
	fs := newFlagSet("snapshot diffs", snapshotDiffsHelp)
	format := fs.String("format", "", "snapshot format: teranode")
	from := fs.Uint("from", 0, "height of the first block")
	to := fs.Int64("to", -1, "height of the last block")
	blocks := fs.String("blocks", "", "blk*.dat or raw block file holding the blocks")
	data := fs.String("data", "", "read the blocks from the block store of the stopped store in this data directory instead of --blocks")
	start := fs.Uint("start-height", 0, "height of the first block of --blocks")
	network := fs.String("network", defaultNetwork, "network of the blocks: a block file of another is refused")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFormat(*format, formatTeranode); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 1:
		return usagef("snapshot diffs: give one OUTDIR, the directory to write the files in")
	case (*blocks == "") == (*data == ""):
		return usagef("snapshot diffs: give --blocks, the file of the blocks, or --data, the store whose block store holds them")
	case *to < 0 || *to < int64(*from) || *to > 1<<32-1:
		return usagef("snapshot diffs: give --to, a height at or above --from (%d)", *from)
	}
	dir := fs.Arg(0)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if *data != "" {
		if err := keptDiffs(ctx, *data, dir, uint32(*from), uint32(*to)); err != nil {
			return err
		}
		return fsutil.SyncDir(dir)
	}
	errDone := errors.New("done")
	last := int64(-1)
	err := forEachBlock(ctx, []string{*blocks}, uint32(*start), *network, func(path string, height uint32, r *chain.BlockReader) error {
		if int64(height) > *to {
			return errDone
		}
		last = int64(height)
		if height < uint32(*from) {
			return nil
		}
		b, err := r.ReadBlock()
		if err != nil {
			return fmt.Errorf("%s: block at height %d: %w", path, height, err)
		}
		add, del, err := writeDiffs(dir, b.Hash, height, b.Txs)
		if err != nil {
			return err
		}
		return printJSONLine(map[string]any{"height": height, "hash": b.Hash.String(), "additions": add, "deletions": del})
	})
	if err != nil && !errors.Is(err, errDone) {
		return err
	}
	if last < *to {
		return fmt.Errorf("%s ends at height %d, before --to %d", *blocks, last, *to)
	}
	return fsutil.SyncDir(dir)
}

// keptDiffs writes the diffs of the blocks from..to that the block store of
// the stopped store in data keeps: the store's own blocks (its block
// metadata names each one's hash), read through its block path like every
// reader of kept blocks.
func keptDiffs(ctx context.Context, data, dir string, from, to uint32) error {
	sf := storeFlags{data: data, sync: "always", index: true}
	st, err := sf.openStores(ctx, existingStore, pathSettings{})
	if err != nil {
		return err
	}
	defer st.close()
	for height := from; height <= to; height++ {
		b, ok, err := st.path.Kept(ctx, height)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the block store of %s does not hold the store's block at height %d (kept from the store's first block with --index, or the newest --block-retention blocks)", data, height)
		}
		add, del, err := writeDiffs(dir, b.Hash, height, b.Txs)
		if err != nil {
			return err
		}
		if err := printJSONLine(map[string]any{"height": height, "hash": b.Hash.String(), "additions": add, "deletions": del}); err != nil {
			return err
		}
	}
	return nil
}

// writeDiffs writes a block's additions and deletions files in dir.
func writeDiffs(dir string, hash chainhash.Hash, height uint32, txs []*chain.Tx) (additions, deletions string, err error) {
	additions = filepath.Join(dir, hash.String()+teranode.ExtAdditions)
	deletions = filepath.Join(dir, hash.String()+teranode.ExtDeletions)
	af, err := teranode.Create(additions)
	if err != nil {
		return "", "", err
	}
	df, err := teranode.Create(deletions)
	if err != nil {
		af.Abort()
		return "", "", err
	}
	w, err := teranode.NewDiffWriter(af, df, hash, height)
	for i := 0; err == nil && i < len(txs); i++ {
		err = w.AddTx(txs[i])
	}
	if err != nil {
		af.Abort()
		df.Abort()
		return "", "", err
	}
	return additions, deletions, errors.Join(af.Close(), df.Close())
}
