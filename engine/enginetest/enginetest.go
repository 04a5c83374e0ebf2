// Package enginetest is the conformance suite every engine passes, run from
// each engine's own tests:
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, enginetest.Harness{Open: ..., Persistent: true})
//	}
//
// and the differential test that drives one random operation sequence through
// two engines and compares every result.
package enginetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// Harness tells the suite how to open the engine under test.
type Harness struct {
	// Open opens the engine over dir. The first Open of a dir must give an
	// empty engine; a later Open of the same dir (after Close) reopens it.
	// Engines without a directory (Redis) use dir to name a fresh, private
	// key space.
	Open func(t testing.TB, dir string) engine.Engine
	// Persistent engines keep their data across Close and Open.
	Persistent bool
	// Clock, when set, is the clock the engines from Open read; the
	// time-to-live test advances it. Nil means the wall clock, which that
	// test waits for (Redis expires keys by its own).
	Clock *Clock
}

// Run runs every conformance test against the harness.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"GetMissing", testGetMissing},
		{"PutGetRemove", testPutGetRemove},
		{"KeepLeavesRecord", testKeep},
		{"FuncErrorLeavesRecord", testFuncError},
		{"SameKeyInBatchAppliesInOrder", testSameKeyInBatch},
		{"ReturnedValuesAreCopies", testCopies},
		{"ValuesFromGetOutliveLaterUpdates", testGetValuesOutliveUpdates},
		{"NewValueMayShareTheLentBytes", testNewValueSharesLentBytes},
		{"EmptyValueIsARecord", testEmptyValue},
		{"CreateOnly", testCreateOnly},
		{"CreateOnlyTTLExpires", testCreateOnlyTTL},
		{"DeleteMissingIsNotAnError", testDeleteMissing},
		{"ScanFollowsTerms", testScan},
		{"ForEachSeesEveryRecord", testForEach},
		{"Meta", testMeta},
		{"LargeValues", testLargeValues},
		{"LargeBatch", testLargeBatch},
		{"LargeMixedBatch", testLargeMixedBatch},
		{"SameKeyInALargeBatchAppliesInOrder", testSameKeyInLargeBatch},
		{"ConcurrentUpdatesAreAtomic", testConcurrentUpdates},
		{"ClosedEngineRefuses", testClosed},
		{"ReopenKeepsEverything", testReopen},
		{"DeferredWritesAreWrites", testDeferredWrites},
		{"CopyIsTheStoreAtOneMoment", testCopy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

// open opens a fresh engine and closes it when the test ends, unless the
// test closed it itself.
func open(t *testing.T, h Harness) (engine.Engine, string) {
	t.Helper()
	dir := t.TempDir()
	e := h.Open(t, dir)
	t.Cleanup(func() {
		if err := e.Close(); err != nil && !errors.Is(err, engine.ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
	return e, dir
}

// K makes a key from a number; keys of different numbers differ in their
// leading bytes, as real (hashed) keys do.
func K(n uint64) engine.Key {
	var k engine.Key
	binary.BigEndian.PutUint64(k[:8], n*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(k[24:], n)
	return k
}

// put returns an UpdateFunc that stores value with terms unconditionally.
func put(value []byte, terms engine.Terms) engine.UpdateFunc {
	return func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: value, Terms: terms}, nil
	}
}

func mustUpdate(t *testing.T, e engine.Engine, updates ...engine.Update) {
	t.Helper()
	errs, err := e.Update(context.Background(), updates)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if len(errs) != len(updates) {
		t.Fatalf("update returned %d errors for %d updates", len(errs), len(updates))
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
}

func mustGet(t *testing.T, e engine.Engine, keys ...engine.Key) [][]byte {
	t.Helper()
	values, err := e.Get(context.Background(), keys)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if len(values) != len(keys) {
		t.Fatalf("get returned %d values for %d keys", len(values), len(keys))
	}
	return values
}

func scanAll(t *testing.T, e engine.Engine, idx engine.Index, lo, hi uint32) map[engine.Key]uint32 {
	t.Helper()
	got := make(map[engine.Key]uint32)
	err := e.Scan(context.Background(), idx, lo, hi, func(k engine.Key, term uint32) error {
		if _, dup := got[k]; dup {
			return fmt.Errorf("scan of %v returned key %x twice", idx, k)
		}
		got[k] = term
		return nil
	})
	if err != nil {
		t.Fatalf("scan %v: %v", idx, err)
	}
	return got
}

func testGetMissing(t *testing.T, h Harness) {
	e, _ := open(t, h)
	for i, v := range mustGet(t, e, K(1), K(2)) {
		if v != nil {
			t.Errorf("key %d: got %x for a missing key", i, v)
		}
	}
}

func testPutGetRemove(t *testing.T, h Harness) {
	e, _ := open(t, h)
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: put([]byte("one"), engine.Terms{})},
		engine.Update{Key: K(2), Fn: put([]byte("two"), engine.Terms{})})
	got := mustGet(t, e, K(1), K(2), K(3))
	if string(got[0]) != "one" || string(got[1]) != "two" || got[2] != nil {
		t.Fatalf("got %q", got)
	}
	var seen []byte
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: func(cur []byte) (engine.Mutation, error) {
		seen = append([]byte(nil), cur...)
		return engine.Mutation{Action: engine.Remove}, nil
	}})
	if string(seen) != "one" {
		t.Errorf("update saw %q, want the current value %q", seen, "one")
	}
	got = mustGet(t, e, K(1), K(2))
	if got[0] != nil || string(got[1]) != "two" {
		t.Fatalf("after remove got %q", got)
	}
}

func testKeep(t *testing.T, h Harness) {
	e, _ := open(t, h)
	terms := engine.Terms{DeleteAtHeight: 7}
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: put([]byte("v"), terms)})
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Keep, Value: []byte("ignored")}, nil
	}})
	if got := mustGet(t, e, K(1)); string(got[0]) != "v" {
		t.Fatalf("Keep changed the record to %q", got[0])
	}
	if got := scanAll(t, e, engine.ByDeleteAtHeight, 0, 100); got[K(1)] != 7 {
		t.Fatalf("Keep changed the terms: %v", got)
	}
	mustUpdate(t, e, engine.Update{Key: K(2), Fn: func(cur []byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Keep}, nil
	}})
	if got := mustGet(t, e, K(2)); got[0] != nil {
		t.Fatalf("Keep on a missing key created %q", got[0])
	}
}

func testFuncError(t *testing.T, h Harness) {
	e, _ := open(t, h)
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: put([]byte("before"), engine.Terms{})})
	refuse := errors.New("refused by the record layer")
	errs, err := e.Update(context.Background(), []engine.Update{
		{Key: K(1), Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: []byte("after")}, refuse
		}},
		{Key: K(2), Fn: put([]byte("other"), engine.Terms{})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[0], refuse) || errs[1] != nil {
		t.Fatalf("errs = %v, want [refused <nil>]", errs)
	}
	got := mustGet(t, e, K(1), K(2))
	if string(got[0]) != "before" || string(got[1]) != "other" {
		t.Fatalf("got %q: a failed update must leave its record, the others must apply", got)
	}
}

func increment(cur []byte) (engine.Mutation, error) {
	var n uint64
	if cur != nil {
		if len(cur) != 8 {
			return engine.Mutation{}, fmt.Errorf("counter of %d bytes", len(cur))
		}
		n = binary.BigEndian.Uint64(cur)
	}
	return engine.Mutation{Action: engine.Put, Value: binary.BigEndian.AppendUint64(nil, n+1)}, nil
}

func counter(t *testing.T, e engine.Engine, k engine.Key) uint64 {
	t.Helper()
	v := mustGet(t, e, k)[0]
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func testSameKeyInBatch(t *testing.T, h Harness) {
	e, _ := open(t, h)
	batch := []engine.Update{{Key: K(1), Fn: increment}, {Key: K(2), Fn: increment}, {Key: K(1), Fn: increment}, {Key: K(1), Fn: increment}}
	mustUpdate(t, e, batch...)
	if n := counter(t, e, K(1)); n != 3 {
		t.Fatalf("three increments of one key in one batch gave %d", n)
	}
	if n := counter(t, e, K(2)); n != 1 {
		t.Fatalf("counter 2 = %d", n)
	}
}

func testCopies(t *testing.T, h Harness) {
	e, _ := open(t, h)
	value := []byte("original")
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: put(value, engine.Terms{})})
	copy(value, "CHANGED!")
	got := mustGet(t, e, K(1))[0]
	if string(got) != "original" {
		t.Fatalf("engine kept a reference to the caller's slice: %q", got)
	}
	copy(got, "CHANGED!")
	if again := mustGet(t, e, K(1))[0]; string(again) != "original" {
		t.Fatalf("engine returned its own storage: %q", again)
	}
}

// A value Get returned is the caller's: no later write of its key (a
// value of the same size, a shorter or a longer one, a removal, a new
// record) nor of a key read in the same call changes the bytes the caller
// holds, however the engine reuses its own buffers.
func testGetValuesOutliveUpdates(t *testing.T, h Harness) {
	e, _ := open(t, h)
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: put([]byte("the first value"), engine.Terms{})},
		engine.Update{Key: K(2), Fn: put([]byte("its neighbour"), engine.Terms{})})
	type held struct {
		value []byte
		want  string
	}
	var holding []held
	hold := func(keys ...engine.Key) {
		t.Helper()
		for _, v := range mustGet(t, e, keys...) {
			holding = append(holding, held{v, string(v)})
		}
	}
	hold(K(1), K(2))
	for _, next := range []string{"a second value!", "third", "a fourth value, longer than the first", ""} {
		mustUpdate(t, e, engine.Update{Key: K(1), Fn: put([]byte(next), engine.Terms{})},
			engine.Update{Key: K(2), Fn: put([]byte(next+" too"), engine.Terms{})})
		hold(K(1), K(2))
	}
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: func([]byte) (engine.Mutation, error) { return engine.Mutation{Action: engine.Remove}, nil }})
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: put([]byte("the key again"), engine.Terms{})})
	if got := mustGet(t, e, K(1), K(2)); string(got[0]) != "the key again" || string(got[1]) != " too" {
		t.Fatalf("got %q, want the last values written", got)
	}
	for i, v := range holding {
		if string(v.value) != v.want {
			t.Fatalf("value %d that Get returned as %q changed to %q after later updates of its key", i, v.want, v.value)
		}
	}
}

// An update function is lent the current bytes and may return part of
// them as the new value (engine.UpdateFunc): the engine stores them as
// they were, also when the next update of the same batch is lent the
// result, and a value Get returned before is left as it was.
func testNewValueSharesLentBytes(t *testing.T, h Harness) {
	e, _ := open(t, h)
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: put([]byte("0123456789"), engine.Terms{})})
	before := mustGet(t, e, K(1))[0]
	dropTwo := func(current []byte) (engine.Mutation, error) {
		if len(current) < 2 {
			return engine.Mutation{}, fmt.Errorf("lent %q, want at least two bytes", current)
		}
		return engine.Mutation{Action: engine.Put, Value: current[2:], Terms: engine.Terms{UnminedSince: uint32(len(current))}}, nil
	}
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: dropTwo}, engine.Update{Key: K(1), Fn: dropTwo})
	if got := mustGet(t, e, K(1))[0]; string(got) != "456789" {
		t.Fatalf("got %q, want %q", got, "456789")
	}
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: dropTwo})
	if got := mustGet(t, e, K(1))[0]; string(got) != "6789" {
		t.Fatalf("got %q, want %q", got, "6789")
	}
	if got := scanAll(t, e, engine.ByUnminedSince, 0, ^uint32(0)); got[K(1)] != 6 || len(got) != 1 {
		t.Fatalf("unminedSince index %v, want the last update's term 6", got)
	}
	if string(before) != "0123456789" {
		t.Fatalf("a value Get returned changed to %q after updates that returned part of the lent bytes", before)
	}
}

// An empty value is a record like any other: Get returns it as a non-nil
// empty slice, distinct from an absent record (nil).
func testEmptyValue(t *testing.T, h Harness) {
	e, _ := open(t, h)
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: put(nil, engine.Terms{})}, engine.Update{Key: K(2), Fn: put([]byte{}, engine.Terms{})})
	for i, v := range mustGet(t, e, K(1), K(2)) {
		if v == nil || len(v) != 0 {
			t.Fatalf("record %d stored with an empty value: Get returned %#v, want a non-nil empty slice", i+1, v)
		}
	}
	seen := 0
	if err := e.ForEach(context.Background(), func(engine.Key, []byte) error { seen++; return nil }); err != nil || seen != 2 {
		t.Fatalf("ForEach saw %d of the 2 empty records (%v)", seen, err)
	}
}

func testCreateOnly(t *testing.T, h Harness) {
	e, _ := open(t, h)
	ctx := context.Background()
	if err := e.CreateOnly(ctx, K(1), []byte("first"), 0); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateOnly(ctx, K(1), []byte("second"), 0); !errors.Is(err, engine.ErrExists) {
		t.Fatalf("second CreateOnly: got %v, want ErrExists", err)
	}
	if got := mustGet(t, e, K(1))[0]; string(got) != "first" {
		t.Fatalf("got %q", got)
	}
	mustUpdate(t, e, engine.Update{Key: K(2), Fn: put([]byte("updated"), engine.Terms{})})
	if err := e.CreateOnly(ctx, K(2), []byte("x"), time.Minute); !errors.Is(err, engine.ErrExists) {
		t.Fatalf("CreateOnly over an updated record: got %v, want ErrExists", err)
	}
	if err := e.Delete(ctx, []engine.Key{K(1)}); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateOnly(ctx, K(1), []byte("third"), 0); err != nil {
		t.Fatalf("CreateOnly after Delete: %v", err)
	}
}

func testCreateOnlyTTL(t *testing.T, h Harness) {
	e, _ := open(t, h)
	ctx := context.Background()
	if err := e.CreateOnly(ctx, K(1), []byte("lock"), time.Second); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateOnly(ctx, K(1), []byte("lock"), time.Second); !errors.Is(err, engine.ErrExists) {
		t.Fatalf("CreateOnly on a live lock: got %v, want ErrExists", err)
	}
	if h.Clock != nil {
		h.Clock.Advance(time.Second)
		if mustGet(t, e, K(1))[0] != nil {
			t.Fatal("a record with a 1 s time to live was still there 1 s later")
		}
	} else {
		// The engine expires by the wall clock, so wait for it, bounded.
		deadline := time.Now().Add(15 * time.Second)
		for mustGet(t, e, K(1))[0] != nil {
			if time.Now().After(deadline) {
				t.Fatal("a record with a 1 s time to live was still there after 15 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := e.CreateOnly(ctx, K(1), []byte("again"), 0); err != nil {
		t.Fatalf("CreateOnly after expiry: %v", err)
	}
}

func testDeleteMissing(t *testing.T, h Harness) {
	e, _ := open(t, h)
	if err := e.Delete(context.Background(), []engine.Key{K(9)}); err != nil {
		t.Fatal(err)
	}
}

func testScan(t *testing.T, h Harness) {
	e, _ := open(t, h)
	mustUpdate(t, e,
		engine.Update{Key: K(1), Fn: put([]byte("a"), engine.Terms{UnminedSince: 10, PreserveUntil: 50})},
		engine.Update{Key: K(2), Fn: put([]byte("b"), engine.Terms{UnminedSince: 20, DeleteAtHeight: 300})},
		engine.Update{Key: K(3), Fn: put([]byte("c"), engine.Terms{DeleteAtHeight: 100, ProducedAt: 5, Consumed: true})},
		engine.Update{Key: K(4), Fn: put([]byte("d"), engine.Terms{})},
	)
	check := func(idx engine.Index, lo, hi uint32, want map[engine.Key]uint32) {
		t.Helper()
		got := scanAll(t, e, idx, lo, hi)
		if fmt.Sprint(sortedKeys(got)) != fmt.Sprint(sortedKeys(want)) {
			t.Fatalf("scan %v [%d,%d]: got %v, want %v", idx, lo, hi, got, want)
		}
		for k, term := range want {
			if got[k] != term {
				t.Fatalf("scan %v: key %x term %d, want %d", idx, k[24:], got[k], term)
			}
		}
	}
	check(engine.ByUnminedSince, 0, ^uint32(0), map[engine.Key]uint32{K(1): 10, K(2): 20})
	check(engine.ByUnminedSince, 11, 20, map[engine.Key]uint32{K(2): 20})
	check(engine.ByUnminedSince, 10, 10, map[engine.Key]uint32{K(1): 10})
	check(engine.ByDeleteAtHeight, 0, 299, map[engine.Key]uint32{K(3): 100})
	check(engine.ByPreserveUntil, 0, ^uint32(0), map[engine.Key]uint32{K(1): 50})

	// Changing a term moves the key; clearing it drops the key; removing the
	// record drops it everywhere.
	mustUpdate(t, e,
		engine.Update{Key: K(1), Fn: put([]byte("a2"), engine.Terms{UnminedSince: 30})},
		engine.Update{Key: K(2), Fn: put([]byte("b2"), engine.Terms{})},
		engine.Update{Key: K(3), Fn: func([]byte) (engine.Mutation, error) { return engine.Mutation{Action: engine.Remove}, nil }},
	)
	check(engine.ByUnminedSince, 0, ^uint32(0), map[engine.Key]uint32{K(1): 30})
	check(engine.ByDeleteAtHeight, 0, ^uint32(0), map[engine.Key]uint32{})
	check(engine.ByPreserveUntil, 0, ^uint32(0), map[engine.Key]uint32{})
	if err := e.Delete(context.Background(), []engine.Key{K(1)}); err != nil {
		t.Fatal(err)
	}
	check(engine.ByUnminedSince, 0, ^uint32(0), map[engine.Key]uint32{})
}

func sortedKeys(m map[engine.Key]uint32) []string {
	var out []string
	for k := range m {
		out = append(out, fmt.Sprintf("%x", k))
	}
	sort.Strings(out)
	return out
}

func testForEach(t *testing.T, h Harness) {
	e, _ := open(t, h)
	want := map[engine.Key]string{}
	var batch []engine.Update
	for i := uint64(0); i < 300; i++ {
		v := fmt.Sprintf("value-%d", i)
		want[K(i)] = v
		batch = append(batch, engine.Update{Key: K(i), Fn: put([]byte(v), engine.Terms{ProducedAt: uint32(i)})})
	}
	mustUpdate(t, e, batch...)
	if err := e.PutMeta(context.Background(), "height", []byte{1}); err != nil {
		t.Fatal(err)
	}
	got := map[engine.Key]string{}
	err := e.ForEach(context.Background(), func(k engine.Key, v []byte) error {
		if _, dup := got[k]; dup {
			return fmt.Errorf("key %x twice", k)
		}
		got[k] = string(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("ForEach saw %d records, want %d (metadata is not a record)", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %x: got %q want %q", k, got[k], v)
		}
	}
	stop := errors.New("stop")
	if err := e.ForEach(context.Background(), func(engine.Key, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("ForEach must return fn's error, got %v", err)
	}
}

func testMeta(t *testing.T, h Harness) {
	e, _ := open(t, h)
	ctx := context.Background()
	v, err := e.GetMeta(ctx, "height")
	if err != nil || v != nil {
		t.Fatalf("unset meta: %q %v", v, err)
	}
	for _, want := range []string{"first", "second"} {
		if err := e.PutMeta(ctx, "height", []byte(want)); err != nil {
			t.Fatal(err)
		}
		if v, err := e.GetMeta(ctx, "height"); err != nil || string(v) != want {
			t.Fatalf("meta: %q %v, want %q", v, err, want)
		}
	}
	if got := mustGet(t, e, K(1))[0]; got != nil {
		t.Fatal("metadata leaked into the record space")
	}
}

func testLargeValues(t *testing.T, h Harness) {
	e, _ := open(t, h)
	sizes := []int{1, 4095, 4096, 4097, 64 << 10, 5 << 20}
	var batch []engine.Update
	for i, n := range sizes {
		batch = append(batch, engine.Update{Key: K(uint64(i)), Fn: put(pattern(n, byte(i)), engine.Terms{})})
	}
	mustUpdate(t, e, batch...)
	for i, n := range sizes {
		if got := mustGet(t, e, K(uint64(i)))[0]; !bytes.Equal(got, pattern(n, byte(i))) {
			t.Fatalf("value of %d bytes came back as %d bytes, or different", n, len(got))
		}
	}
	// Shrinking a large value in place must not leave the old one behind.
	mustUpdate(t, e, engine.Update{Key: K(5), Fn: put([]byte("small now"), engine.Terms{})})
	if got := mustGet(t, e, K(5))[0]; string(got) != "small now" {
		t.Fatalf("got %d bytes", len(got))
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

func testLargeBatch(t *testing.T, h Harness) {
	e, _ := open(t, h)
	const n = 20000
	batch := make([]engine.Update, n)
	keys := make([]engine.Key, n)
	for i := range batch {
		keys[i] = K(uint64(i))
		batch[i] = engine.Update{Key: keys[i], Fn: put(binary.BigEndian.AppendUint32(nil, uint32(i)), engine.Terms{UnminedSince: uint32(i%7 + 1)})}
	}
	mustUpdate(t, e, batch...)
	for i, v := range mustGet(t, e, keys...) {
		if len(v) != 4 || binary.BigEndian.Uint32(v) != uint32(i) {
			t.Fatalf("key %d: got %x", i, v)
		}
	}
	if got := len(scanAll(t, e, engine.ByUnminedSince, 1, 7)); got != n {
		t.Fatalf("scan found %d of %d", got, n)
	}
}

// A large batch of distinct keys, which an engine may run on several
// goroutines, mixes every outcome an update can have: a new record, an
// overwrite with part of the lent bytes, a removal, a keep, a refusal and
// a removal of a record that does not exist. Each key gets exactly its own
// update's outcome, and its terms follow.
func testLargeMixedBatch(t *testing.T, h Harness) {
	e, _ := open(t, h)
	const n = 3000 // a multiple of the six kinds below
	stored := func(i int) []byte { return fmt.Appendf(nil, "stored value %d", i) }
	var seed []engine.Update
	for i := 0; i < n; i++ {
		if i%6 != 0 && i%6 != 5 { // kinds 0 and 5 start absent
			seed = append(seed, engine.Update{Key: K(uint64(i)), Fn: put(stored(i), engine.Terms{DeleteAtHeight: 1})})
		}
	}
	mustUpdate(t, e, seed...)
	refuse := errors.New("refused")
	batch := make([]engine.Update, n)
	for i := range batch {
		var fn engine.UpdateFunc
		switch i % 6 {
		case 0: // a new record
			fn = put(fmt.Appendf(nil, "new %d", i), engine.Terms{UnminedSince: uint32(i + 1)})
		case 1: // part of the lent bytes, "value <i>"
			fn = func(current []byte) (engine.Mutation, error) {
				if !bytes.Equal(current, stored(i)) {
					return engine.Mutation{}, fmt.Errorf("key %d lent %q, want %q", i, current, stored(i))
				}
				return engine.Mutation{Action: engine.Put, Value: current[len("stored "):], Terms: engine.Terms{UnminedSince: uint32(i + 1)}}, nil
			}
		case 2:
			fn = func([]byte) (engine.Mutation, error) { return engine.Mutation{Action: engine.Remove}, nil }
		case 3:
			fn = func([]byte) (engine.Mutation, error) { return engine.Mutation{Action: engine.Keep}, nil }
		case 4:
			fn = func([]byte) (engine.Mutation, error) {
				return engine.Mutation{Action: engine.Put, Value: []byte("refused")}, refuse
			}
		case 5: // absent, and removed again
			fn = func(current []byte) (engine.Mutation, error) {
				if current != nil {
					return engine.Mutation{}, fmt.Errorf("key %d lent %q, want nothing", i, current)
				}
				return engine.Mutation{Action: engine.Remove}, nil
			}
		}
		batch[i] = engine.Update{Key: K(uint64(i)), Fn: fn}
	}
	errs, err := e.Update(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]engine.Key, n)
	for i := range keys {
		keys[i] = K(uint64(i))
		// Only kind 4 is refused, and with its own error.
		if wantRefused := i%6 == 4; (errs[i] != nil) != wantRefused || wantRefused && !errors.Is(errs[i], refuse) {
			t.Fatalf("update %d (kind %d): error %v", i, i%6, errs[i])
		}
	}
	unmined := scanAll(t, e, engine.ByUnminedSince, 0, ^uint32(0))
	toDelete := scanAll(t, e, engine.ByDeleteAtHeight, 0, ^uint32(0))
	for i, got := range mustGet(t, e, keys...) {
		var want []byte
		switch i % 6 {
		case 0:
			want = fmt.Appendf(nil, "new %d", i)
		case 1:
			want = fmt.Appendf(nil, "value %d", i)
		case 3, 4:
			want = stored(i)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("key %d (kind %d) reads %q, want %q", i, i%6, got, want)
		}
		k := K(uint64(i))
		if wantUnmined := i%6 <= 1; (unmined[k] == uint32(i+1)) != wantUnmined {
			t.Fatalf("key %d (kind %d): unmined-since term %d", i, i%6, unmined[k])
		}
		if _, has := toDelete[k]; has != (i%6 == 3 || i%6 == 4) {
			t.Fatalf("key %d (kind %d): delete-at-height listed %v", i, i%6, has)
		}
	}
}

// A large batch that names one key many times among others applies that
// key's updates in batch order, each seeing the one before, as a small
// batch does.
func testSameKeyInLargeBatch(t *testing.T, h Harness) {
	e, _ := open(t, h)
	const n, repeated = 2000, 500
	batch := make([]engine.Update, 0, n)
	for i := 0; i < n; i++ {
		k := K(uint64(i))
		if i%(n/repeated) == 0 {
			k = K(uint64(n))
		}
		batch = append(batch, engine.Update{Key: k, Fn: increment})
	}
	mustUpdate(t, e, batch...)
	if got := counter(t, e, K(uint64(n))); got != repeated {
		t.Fatalf("%d increments of one key in a batch of %d gave %d", repeated, n, got)
	}
	if got := counter(t, e, K(1)); got != 1 {
		t.Fatalf("another key's counter is %d", got)
	}
}

func testConcurrentUpdates(t *testing.T, h Harness) {
	e, _ := open(t, h)
	const workers, rounds, keys = 8, 100, 4
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				var batch []engine.Update
				for k := 0; k < keys; k++ {
					batch = append(batch, engine.Update{Key: K(uint64(k)), Fn: increment})
				}
				errs, err := e.Update(context.Background(), batch)
				if err == nil {
					err = errors.Join(errs...)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for k := 0; k < keys; k++ {
		if n := counter(t, e, K(uint64(k))); n != workers*rounds {
			t.Fatalf("key %d counted %d of %d increments: an update was lost", k, n, workers*rounds)
		}
	}
}

func testClosed(t *testing.T, h Harness) {
	dir := t.TempDir()
	e := h.Open(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.Get(ctx, []engine.Key{K(1)}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if _, err := e.Update(ctx, []engine.Update{{Key: K(1), Fn: increment}}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Update after Close: %v", err)
	}
	if err := e.Close(); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

func testReopen(t *testing.T, h Harness) {
	if !h.Persistent {
		t.Skip("engine is not persistent")
	}
	dir := t.TempDir()
	ctx := context.Background()
	e := h.Open(t, dir)
	mustUpdate(t, e,
		engine.Update{Key: K(1), Fn: put([]byte("kept"), engine.Terms{DeleteAtHeight: 9, UnminedSince: 3})},
		engine.Update{Key: K(2), Fn: put(pattern(5<<20, 2), engine.Terms{PreserveUntil: 4})},
		engine.Update{Key: K(3), Fn: put([]byte("gone"), engine.Terms{})},
	)
	mustUpdate(t, e, engine.Update{Key: K(3), Fn: func([]byte) (engine.Mutation, error) { return engine.Mutation{Action: engine.Remove}, nil }})
	if err := e.PutMeta(ctx, "height", []byte("42")); err != nil {
		t.Fatal(err)
	}
	if err := e.Checkpoint(ctx, 42); err != nil {
		t.Fatal(err)
	}
	// Written after the checkpoint: SyncAlways must keep it too.
	mustUpdate(t, e, engine.Update{Key: K(4), Fn: put([]byte("after"), engine.Terms{})})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = h.Open(t, dir)
	defer e.Close()
	got := mustGet(t, e, K(1), K(2), K(3), K(4))
	if string(got[0]) != "kept" || !bytes.Equal(got[1], pattern(5<<20, 2)) || got[2] != nil || string(got[3]) != "after" {
		t.Fatalf("after reopen: %q %d bytes %q %q", got[0], len(got[1]), got[2], got[3])
	}
	if m, err := e.GetMeta(ctx, "height"); err != nil || string(m) != "42" {
		t.Fatalf("meta after reopen: %q %v", m, err)
	}
	if got := scanAll(t, e, engine.ByDeleteAtHeight, 0, 100); got[K(1)] != 9 || len(got) != 1 {
		t.Fatalf("deleteAtHeight index after reopen: %v", got)
	}
	if got := scanAll(t, e, engine.ByPreserveUntil, 0, 100); got[K(2)] != 4 || len(got) != 1 {
		t.Fatalf("preserveUntil index after reopen: %v", got)
	}
}

// testDeferredWrites makes every kind of write with a context that defers
// its sync (engine.DeferSync): each is seen at once as a write is, the
// durable write after them returns, and a persistent engine still holds
// them all after Close and Open.
func testDeferredWrites(t *testing.T, h Harness) {
	dir := t.TempDir()
	ctx := context.Background()
	deferred := engine.DeferSync(ctx)
	e := h.Open(t, dir)
	errs, err := e.Update(deferred, []engine.Update{
		{Key: K(1), Fn: put([]byte("deferred"), engine.Terms{DeleteAtHeight: 7})},
		{Key: K(2), Fn: put([]byte("removed"), engine.Terms{})},
	})
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("deferred update: %v %v", errs, err)
	}
	if err := e.CreateOnly(deferred, K(3), []byte("created"), 0); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(deferred, []engine.Key{K(2)}); err != nil {
		t.Fatal(err)
	}
	if err := e.PutMeta(deferred, "tip", []byte("deferred")); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		got := mustGet(t, e, K(1), K(2), K(3))
		if string(got[0]) != "deferred" || got[1] != nil || string(got[2]) != "created" {
			t.Fatalf("%s: %q %q %q", when, got[0], got[1], got[2])
		}
		if m, err := e.GetMeta(ctx, "tip"); err != nil || string(m) != "deferred" {
			t.Fatalf("%s: meta %q %v", when, m, err)
		}
		if got := scanAll(t, e, engine.ByDeleteAtHeight, 0, 100); got[K(1)] != 7 || len(got) != 1 {
			t.Fatalf("%s: deleteAtHeight index %v", when, got)
		}
	}
	check("after the deferred writes")
	// The durable write that ends the unit.
	if err := e.PutMeta(ctx, "height", []byte("7")); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if !h.Persistent {
		return
	}
	e = h.Open(t, dir)
	defer e.Close()
	check("after reopen")
}

// testCopy: an engine that copies itself (engine.Copier) copies, while
// another goroutine writes, a store the engine opens that holds every
// write returned before the copy began (values, terms, meta; a large value
// too), each write made meanwhile whole or not at all, and none made after
// the copy returned; the engine goes on serving. Another engine refuses
// with a *engine.CannotCopyError.
func testCopy(t *testing.T, h Harness) {
	e, _ := open(t, h)
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "copy")
	if _, ok := e.(engine.Copier); !ok {
		if err := engine.CopyStore(ctx, e, target); !errors.As(err, new(*engine.CannotCopyError)) {
			t.Fatalf("an engine that cannot copy: %v", err)
		}
		return
	}
	mustUpdate(t, e,
		engine.Update{Key: K(1), Fn: put([]byte("before"), engine.Terms{DeleteAtHeight: 9})},
		engine.Update{Key: K(2), Fn: put(pattern(2<<20, 2), engine.Terms{})},
	)
	if err := e.PutMeta(ctx, "height", []byte("7")); err != nil {
		t.Fatal(err)
	}
	// Each write of the goroutine puts two keys in one batch: a copy
	// holds both or neither.
	stop, written := make(chan struct{}), make(chan uint64)
	go func() {
		n := uint64(0)
		defer func() { written <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			v := binary.BigEndian.AppendUint64(nil, n)
			if _, err := e.Update(ctx, []engine.Update{{Key: K(1000 + 2*n), Fn: put(v, engine.Terms{})}, {Key: K(1001 + 2*n), Fn: put(v, engine.Terms{})}}); err != nil {
				t.Error(err)
				return
			}
			n++
		}
	}()
	err := engine.CopyStore(ctx, e, target)
	close(stop)
	meanwhile := <-written
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, e, engine.Update{Key: K(3), Fn: put([]byte("after"), engine.Terms{})})

	c := h.Open(t, target)
	defer c.Close()
	got := mustGet(t, c, K(1), K(2), K(3))
	if string(got[0]) != "before" || !bytes.Equal(got[1], pattern(2<<20, 2)) || got[2] != nil {
		t.Fatalf("the copy holds %q, %d bytes, %q", got[0], len(got[1]), got[2])
	}
	if m, err := c.GetMeta(ctx, "height"); err != nil || string(m) != "7" {
		t.Fatalf("the copy's meta: %q %v", m, err)
	}
	if got := scanAll(t, c, engine.ByDeleteAtHeight, 0, 100); got[K(1)] != 9 || len(got) != 1 {
		t.Fatalf("the copy's deleteAtHeight index: %v", got)
	}
	for n := uint64(0); n < meanwhile; n++ {
		pair := mustGet(t, c, K(1000+2*n), K(1001+2*n))
		if (pair[0] == nil) != (pair[1] == nil) {
			t.Fatalf("write %d of %d made during the copy is in it in part: %q %q", n, meanwhile, pair[0], pair[1])
		}
	}
	if got := mustGet(t, e, K(3)); string(got[0]) != "after" {
		t.Fatalf("the engine after its copy: %q", got[0])
	}
}
