package sozu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/internal/dirstate"
)

// A read-only open of a store whose log a crash tore replays the log into
// memory: it serves every record but the torn one (out-of-line values the
// log carries included, past the value log's checkpointed end), refuses
// writes with engine.ErrReadOnly and leaves every file as it was; a
// writing open then recovers the same records.
func TestReadOnlyOpenOfATornLogChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o := tinyOptions()
	o.CheckpointLogBytes = 1 // every Checkpoint a page checkpoint
	e := openFor(t, dir, o)
	const n, bulk = 60, 6000
	for i := 0; i < n; i++ {
		size := 20
		if i%3 == 0 {
			size = 2 * o.InlineMax // out of line, in the value log
		}
		putN(t, e, i, i+1, size)
		if i == n/2 {
			if err := e.Checkpoint(ctx, uint32(i)); err != nil {
				t.Fatal(err)
			}
			// Enough records after the checkpoint for a writing
			// replay to write buckets out on the way.
			putN(t, e, n, n+bulk, 20)
		}
	}
	e.abandon()
	path, size := largestLog(t, dir)
	if err := os.Truncate(path, size-markRecordSize-7); err != nil {
		t.Fatal(err)
	}
	before := dirstate.Of(t, dir)

	o.ReadOnly = true
	e = openFor(t, dir, o)
	st, err := e.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Recovery.DroppedBytes == 0 || st.Recovery.ReplayedRecords == 0 {
		t.Fatalf("recovery report %+v: want records replayed and a torn tail dropped", st.Recovery)
	}
	readOnly, err := e.Get(ctx, firstKeys(n+bulk))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(ctx, []engine.Update{{Key: enginetest.K(1), Fn: func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Remove}, nil
	}}}); !errors.Is(err, engine.ErrReadOnly) {
		t.Errorf("Update: %v, want engine.ErrReadOnly", err)
	}
	for what, err := range map[string]error{
		"CreateOnly": e.CreateOnly(ctx, enginetest.K(n+1), []byte("x"), time.Minute),
		"Delete":     e.Delete(ctx, firstKeys(1)),
		"PutMeta":    e.PutMeta(ctx, "name", []byte("x")),
		"SetHeight":  e.SetHeight(ctx, 7),
		"Checkpoint": e.Checkpoint(ctx, 7),
	} {
		if !errors.Is(err, engine.ErrReadOnly) {
			t.Errorf("%s: %v, want engine.ErrReadOnly", what, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	dirstate.MustBeUnchanged(t, dir, before)

	o.ReadOnly = false
	e = openFor(t, dir, o)
	defer e.Close()
	written, err := e.Get(ctx, firstKeys(n+bulk))
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for i := range written {
		if !bytes.Equal(readOnly[i], written[i]) {
			t.Errorf("key %d: %d bytes read-only, %d after a writing open", i, len(readOnly[i]), len(written[i]))
		}
		if written[i] == nil {
			lost++
		}
	}
	if lost != 1 {
		t.Errorf("%d records lost, want exactly the torn one", lost)
	}
}

// A directory that holds no store is refused read-only, and not created.
func TestReadOnlyOpenRefusesAMissingStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	o := tinyOptions()
	o.ReadOnly = true
	if _, err := Open(dir, o); err == nil {
		t.Fatal("a read-only open of a missing store succeeded")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused open created %s: %v", dir, err)
	}
}
