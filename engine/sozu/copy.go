package sozu

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/fsutil"
)

// CopyTo implements engine.Copier. Under the exclusive barrier, which
// waits for the calls in flight and holds the next ones, it takes a page
// checkpoint, as Close does, so that the checkpoints, pages and value logs
// on disk hold the whole store and the log holds nothing, then copies the
// directory's files into dir. The copy opens with nothing to replay. The
// store's calls wait for the copy: it costs the time to write the changed
// buckets and to copy the files.
func (e *Engine) CopyTo(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.barrier.Lock()
	defer e.barrier.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	if err := e.failure.err(); err != nil {
		return err
	}
	if !e.opts.ReadOnly { // read-only, the files on disk are the store
		if err := e.checkpoint(); err != nil {
			return err
		}
	}
	// A temporary file is a write a crash cut short, no part of the store.
	err := fsutil.CopyTree(e.dir, dir, func(rel string, _ fs.DirEntry) bool { return strings.HasSuffix(rel, ".tmp") })
	if err != nil {
		return fmt.Errorf("sozu: %w", err)
	}
	return nil
}
