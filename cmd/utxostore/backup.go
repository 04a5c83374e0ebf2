package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/fsutil"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/snapshot/teranode"
	"github.com/utxostore/utxostore/utxo"
)

const backupHelp = `Usage: utxostore backup --server ADDR [flags] DIR

Has the running daemon at --server copy its whole data directory into DIR
on the daemon's machine, while it goes on serving: the store, the address
index, the block store, the large transactions' blobs and the directory's
UTXOSTORE file, all at one block. No block connects while it copies (they
wait, and go on after it); reads, the daemon's status and unmined
transactions go on, except that a sozu store's own calls wait while its
files are copied.

DIR must not exist or be an empty directory; a relative DIR is taken from
this command's working directory. The copy is written to a temporary
directory beside DIR, DIR.tmp-<digits>, synced, and renamed to DIR once
whole, so a backup that fails leaves no DIR; the next backup into DIR
removes what a backup killed with the daemon left. Engines sozu and pebble: a store in memory or in
Redis is refused.

'utxostore serve --data DIR' serves the copy, and 'utxostore info --data
DIR' prints the summary of the block it was taken at. The last line on
stdout is one JSON object: dir, height, hash, txouts, total_amount and
muhash of that block.

The daemon's --token, when it has one, is needed (--token).

Flags:
`

// backupResult is the JSON line backup ends with.
type backupResult struct {
	Dir    string `json:"dir"`
	Height uint32 `json:"height"`
	Hash   string `json:"hash"`
	coinstats.Summary
}

func runBackup(ctx context.Context, args []string) error {
	fs := newFlagSet("backup", backupHelp)
	addr := fs.String("server", server.DefaultGRPCAddr, "gRPC address of the daemon")
	token := fs.String("token", "", "the daemon's bearer token")
	var tlsFlags clientTLS
	tlsFlags.register(fs)
	if err := parseWithArgs(fs, args, "backup: give the directory DIR to write the copy to"); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("backup: give one directory DIR, got %q", fs.Args())
	}
	dir, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return err
	}
	c, err := dial(*addr, *token, &tlsFlags)
	if err != nil {
		return err
	}
	defer c.Close()
	tip, stats, err := c.Backup(ctx, dir)
	if err != nil {
		return err
	}
	return printJSONLine(backupResult{Dir: dir, Height: tip.Height, Hash: tip.Hash.String(), Summary: stats})
}

// daemonSnapshots take the daemon's whole-store copies (server.Snapshots)
// of the data directory its stores were opened from.
type daemonSnapshots struct {
	st              *stores
	data            string
	engine, network string
}

var _ server.Snapshots = (*daemonSnapshots)(nil)

func newDaemonSnapshots(st *stores, f *storeFlags) *daemonSnapshots {
	return &daemonSnapshots{st: st, data: f.data, engine: f.engine, network: f.network}
}

// Backup implements server.Snapshots: with the block path held, so that
// every store stands at the same block, each store copies itself into a
// temporary directory beside dir (the engine's files, the index and the
// block store's locations by checkpoints), which gets the data
// directory's storeFile, is synced and is renamed to dir.
func (d *daemonSnapshots) Backup(ctx context.Context, dir string) (res server.BackupResult, err error) {
	if !keepsDataInDir(d.engine) { // the engines that copy themselves
		return res, &engine.CannotCopyError{Engine: d.engine}
	}
	// A copy inside the data directory would be copied into itself. The
	// paths are compared with their links resolved, so that neither a
	// link to the data directory nor one to DIR's parent hides it; DIR
	// itself may not exist yet, its parent does (server.CheckBackupDir).
	data, err := filepath.Abs(d.data)
	if err != nil {
		return res, err
	}
	realData, err := filepath.EvalSymlinks(data)
	if err != nil {
		return res, err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(dir))
	if err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	if rel, err := filepath.Rel(realData, filepath.Join(parent, filepath.Base(dir))); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return res, &server.BackupDirError{Dir: dir, Reason: "is inside the daemon's data directory " + data}
	}
	if err := removeKilledBackups(dir); err != nil {
		return res, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), backupPrefix(dir))
	if err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, os.RemoveAll(tmp))
		}
	}()
	blobs, err := blob.NewFileStore(filepath.Join(d.data, "blobs"))
	if err != nil {
		return res, err
	}
	err = d.st.path.Hold(func() error {
		tip, ok, err := d.st.store.Tip(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: there is nothing to back up", server.ErrNoBlock)
		}
		res.Tip = tip
		if res.Stats, err = d.st.store.SetStats(ctx); err != nil {
			return err
		}
		// A blob is written before the record that names it: the blobs
		// copied before the records, and those added after them, hold
		// every blob the copied records name, but for one a Delete
		// removed ahead of its record, which the copy's pruner finishes
		// as after a crash.
		if err := blobs.CopyTo(filepath.Join(tmp, "blobs")); err != nil {
			return err
		}
		if err := d.st.store.CopyTo(ctx, filepath.Join(tmp, d.engine)); err != nil {
			return err
		}
		if err := blobs.CopyTo(filepath.Join(tmp, "blobs")); err != nil {
			return err
		}
		if d.st.index != nil {
			err = d.st.index.CopyTo(filepath.Join(tmp, "index"))
		} else {
			err = d.copyUnopened("index", tmp)
		}
		if err != nil {
			return err
		}
		if d.st.blocks != nil {
			return d.st.blocks.CopyTo(filepath.Join(tmp, "blocks"))
		}
		return d.copyUnopened("blocks", tmp)
	})
	if err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	if err := (dataDir{path: tmp}).mark(d.engine, d.network); err != nil {
		return res, err
	}
	if err := fsutil.SyncDir(tmp); err != nil {
		return res, err
	}
	// An empty dir (server.CheckBackupDir let it through) gives way to the
	// copy; one that filled meanwhile is not replaced (rename fails).
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	return res, fsutil.SyncDir(filepath.Dir(dir))
}

// backupPrefix starts the name of the temporary directory a backup into
// dir copies the stores to, beside dir; os.MkdirTemp ends it with digits.
func backupPrefix(dir string) string { return filepath.Base(dir) + ".tmp-" }

// removeKilledBackups removes the temporary directories that backups into
// dir left when the daemon was killed or crashed during the copy: a backup
// removes its own when it fails, so one still there is a dead backup's, a
// part copy nothing will use that holds up to a whole store's disk. Only
// names of dir's own pattern go; two backups into one dir at once are not
// supported, as only one could rename its copy there.
func removeKilledBackups(dir string) error {
	if err := fsutil.RemoveTemps(filepath.Dir(dir), backupPrefix(dir)); err != nil {
		return fmt.Errorf("backup: removing what a backup into %s that did not end left: %w", dir, err)
	}
	return nil
}

// copyUnopened copies DATA/name, a store kept beside the UTXO store that
// this daemon has not opened (one served without --index), into tmp as it
// lies: nothing writes it while the daemon holds the directory, and the
// copy is the whole data directory, so that the copy's index is no further
// behind than the data directory's own.
func (d *daemonSnapshots) copyUnopened(name, tmp string) error {
	src := filepath.Join(d.data, name)
	if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fsutil.CopyTree(src, filepath.Join(tmp, name), nil)
}

// SpoolDir implements server.Snapshots: the data directory (the system's
// temporary directory for a store without one).
func (d *daemonSnapshots) SpoolDir() string {
	if !keepsDataInDir(d.engine) {
		return ""
	}
	return d.data
}

// DumpCoins implements server.Snapshots: the set is walked with the block
// path held, so it is the set at one block while the daemon serves, and
// the coins sent are held to the statistics the store keeps at that block
// (matchesKept), as a dump of a stopped store's data directory is: a store
// stopped inside a block holds that block's first writes, which the walk
// cannot tell from the tip's set. The server spools what is sent, so on a
// mismatch the client receives only the error.
func (d *daemonSnapshots) DumpCoins(ctx context.Context, withHeaders bool, tip func(utxo.Tip) error, coin func(*coinstats.Coin) error, header func(teranode.BlockIndex) error) error {
	store := d.st.store
	return d.st.path.Hold(func() error {
		t, ok, err := store.Tip(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return errEmptySet
		}
		var headers []teranode.BlockIndex
		if withHeaders {
			// Read before the first coin: a store that lacks them is
			// refused at once.
			if headers, err = chainHeaders(ctx, store, t); err != nil {
				return err
			}
		}
		if err := tip(t); err != nil {
			return err
		}
		var sent coinstats.Stats
		err = store.ForEachCoin(ctx, func(c *coinstats.Coin) error {
			if !sent.Add(c) {
				return nil
			}
			return coin(c)
		})
		if err != nil {
			return err
		}
		kept, err := store.SetStats(ctx)
		if err != nil {
			return err
		}
		if err := matchesKept(sent.Finalize(), &kept); err != nil {
			return err
		}
		for _, h := range headers {
			if err := header(h); err != nil {
				return err
			}
		}
		return nil
	})
}
