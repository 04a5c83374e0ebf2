package redis

import (
	"context"
	"errors"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// What an engine remembers of a record (recent) is only ever an
// assumption: when another process has deleted or changed the record
// since, an Update runs its function on the record as it is, reports what
// the function says of that, and writes only on it.
func TestRecentRecordsAreCheckedNotTrusted(t *testing.T) {
	dir := t.TempDir()
	e := openAt(t, clusterAddrs, dir, nil)
	defer e.Close()
	other := openAt(t, clusterAddrs, dir, nil)
	defer other.Close()
	ctx := context.Background()
	gone, changed := enginetest.K(1), enginetest.K(2)
	errMissing := errors.New("missing")
	appendTo := func(k engine.Key, suffix string) engine.Update {
		return engine.Update{Key: k, Fn: func(cur []byte) (engine.Mutation, error) {
			if cur == nil {
				return engine.Mutation{}, errMissing
			}
			return engine.Mutation{Action: engine.Put, Value: append(append([]byte{}, cur...), suffix...), Terms: engine.Terms{DeleteAtHeight: 3}}, nil
		}}
	}
	put := func(k engine.Key, value string) engine.Update {
		return engine.Update{Key: k, Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: []byte(value)}, nil
		}}
	}
	update := func(eng *Engine, batch ...engine.Update) []error {
		t.Helper()
		errs, err := eng.Update(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		return errs
	}
	update(e, put(gone, "a"), put(changed, "b")) // e remembers both
	if err := other.Delete(ctx, []engine.Key{gone}); err != nil {
		t.Fatal(err)
	}
	update(other, appendTo(changed, "+other"))

	errs := update(e, appendTo(gone, "+e"), appendTo(changed, "+e"))
	if !errors.Is(errs[0], errMissing) || errs[1] != nil {
		t.Fatalf("updates on records changed elsewhere: %v, want %v and nil", errs, errMissing)
	}
	got, err := other.Get(ctx, []engine.Key{gone, changed})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != nil || string(got[1]) != "b+other+e" {
		t.Fatalf("records %q, %q; want none and %q", got[0], got[1], "b+other+e")
	}
	seen := map[engine.Key]uint32{}
	if err := e.Scan(ctx, engine.ByDeleteAtHeight, 1, 10, func(k engine.Key, term uint32) error { seen[k] = term; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[changed] != 3 {
		t.Fatalf("index entries %v, want only the changed record's", seen)
	}
}
