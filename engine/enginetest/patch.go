package enginetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// The conformance tests of engine.Patch: whatever an engine does with the
// edits (in place, as its own log record, as a read-modify-write), the
// outcome is that of a Put of the patched value.

// patchWith returns an UpdateFunc that patches the current value with
// edits and terms, and records in *lent the bytes it was lent, copied.
func patchWith(edits []engine.Edit, terms engine.Terms, lent *[]byte) engine.UpdateFunc {
	return func(cur []byte) (engine.Mutation, error) {
		if lent != nil {
			*lent = slices.Clone(cur)
		}
		return engine.Mutation{Action: engine.Patch, Edits: edits, Terms: terms}, nil
	}
}

// spendEdits are the edits of a spend: a 4-byte counter near the record's
// start and a 37-byte output slot at at, fresh bytes each.
func spendEdits(at int, seed byte) []engine.Edit {
	return []engine.Edit{
		{Offset: 2, Bytes: bytes.Repeat([]byte{seed}, 4)},
		{Offset: at, Bytes: bytes.Repeat([]byte{seed + 1}, 37)},
	}
}

// patchedCopy is what edits make of value, computed here the slow way.
func patchedCopy(value []byte, edits []engine.Edit) []byte {
	out := slices.Clone(value)
	for _, ed := range edits {
		for i, b := range ed.Bytes {
			out[ed.Offset+i] = b
		}
	}
	return out
}

// forEachValues lists every record ForEach sees.
func forEachValues(t *testing.T, e engine.Engine) map[engine.Key][]byte {
	t.Helper()
	got := map[engine.Key][]byte{}
	if err := e.ForEach(context.Background(), func(k engine.Key, v []byte) error {
		got[k] = slices.Clone(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// A patch changes exactly its ranges, of small and large values (the
// large ones beyond a page, out of line in Sozu), and replaces the terms:
// Get, ForEach and every index show the patched record, a value Get
// returned before keeps its bytes, and a persistent engine keeps the
// patched record across Close and Open. Edits apply in order, so a later
// one overwrites an earlier one it overlaps, whatever their order.
func testPatch(t *testing.T, h Harness) {
	e, dir := open(t, h)
	before := engine.Terms{UnminedSince: 10, PreserveUntil: 50, ProducedAt: 5}
	after := engine.Terms{DeleteAtHeight: 120, ProducedAt: 6, Consumed: true}
	sizes := []int{90, 600, 2000, 9000}
	want := map[engine.Key][]byte{}
	var puts []engine.Update
	for i, n := range sizes {
		want[K(uint64(i))] = pattern(n, byte(i))
		puts = append(puts, engine.Update{Key: K(uint64(i)), Fn: put(pattern(n, byte(i)), before)})
	}
	// Out of order and overlapping: the last edit wins where they meet.
	unordered := []engine.Edit{{Offset: 50, Bytes: []byte("later")}, {Offset: 10, Bytes: []byte("0123456789")}, {Offset: 15, Bytes: []byte("ab")}}
	want[K(10)] = pattern(300, 10)
	puts = append(puts, engine.Update{Key: K(10), Fn: put(pattern(300, 10), before)})
	mustUpdate(t, e, puts...)
	held := mustGet(t, e, K(1))[0]

	var patches []engine.Update
	lent := make([][]byte, len(sizes))
	for i, n := range sizes {
		edits := spendEdits(n-37-20, byte(0xA0+i))
		// The last byte too: a range that ends where the value ends.
		edits = append(edits, engine.Edit{Offset: n - 1, Bytes: []byte{0xEE}})
		k := K(uint64(i))
		want[k] = patchedCopy(want[k], edits)
		patches = append(patches, engine.Update{Key: k, Fn: patchWith(edits, after, &lent[i])})
	}
	want[K(10)] = patchedCopy(want[K(10)], unordered)
	if got := string(want[K(10)][10:20]); got != "01234ab789" {
		t.Fatalf("the expected value is wrong: %q", got)
	}
	patches = append(patches, engine.Update{Key: K(10), Fn: patchWith(unordered, after, nil)})
	mustUpdate(t, e, patches...)
	for i, n := range sizes {
		if !bytes.Equal(lent[i], pattern(n, byte(i))) {
			t.Fatalf("the patch of %d bytes was lent another value than the one stored", n)
		}
	}
	if !bytes.Equal(held, pattern(600, 1)) {
		t.Fatal("a patch changed the bytes of a value Get returned before it")
	}

	check := func(e engine.Engine) {
		t.Helper()
		keys := []engine.Key{K(0), K(1), K(2), K(3), K(10)}
		for i, v := range mustGet(t, e, keys...) {
			if !bytes.Equal(v, want[keys[i]]) {
				t.Fatalf("key %x: Get returns %d bytes that differ from the patched %d", keys[i][24:], len(v), len(want[keys[i]]))
			}
		}
		each := forEachValues(t, e)
		if len(each) != len(want) {
			t.Fatalf("ForEach sees %d records, want %d", len(each), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(each[k], v) {
				t.Fatalf("key %x: ForEach sees %d bytes that differ from the patched %d", k[24:], len(each[k]), len(v))
			}
		}
		if got := scanAll(t, e, engine.ByDeleteAtHeight, 0, 1000); len(got) != len(want) || got[K(0)] != 120 || got[K(10)] != 120 {
			t.Fatalf("deleteAtHeight index after the patch: %v", got)
		}
		for _, idx := range []engine.Index{engine.ByUnminedSince, engine.ByPreserveUntil} {
			if got := scanAll(t, e, idx, 0, ^uint32(0)); len(got) != 0 {
				t.Fatalf("%v index keeps the terms the patch cleared: %v", idx, got)
			}
		}
	}
	check(e)

	// Terms alone: a patch with no edits leaves the value and moves the
	// record in the indexes.
	mustUpdate(t, e, engine.Update{Key: K(0), Fn: patchWith(nil, engine.Terms{UnminedSince: 7}, nil)})
	if got := mustGet(t, e, K(0))[0]; !bytes.Equal(got, want[K(0)]) {
		t.Fatal("a patch without edits changed the value")
	}
	if got := scanAll(t, e, engine.ByUnminedSince, 0, 100); len(got) != 1 || got[K(0)] != 7 {
		t.Fatalf("unminedSince index after a patch of terms alone: %v", got)
	}
	mustUpdate(t, e, engine.Update{Key: K(0), Fn: patchWith(nil, after, nil)})

	if !h.Persistent {
		return
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = h.Open(t, dir)
	defer e.Close()
	check(e)
}

// A patch with an edit that runs past the value fails with an
// *engine.EditError and changes nothing, not even the edits before the
// bad one nor the terms; the other updates of the batch apply.
func testPatchOutOfRange(t *testing.T, h Harness) {
	e, _ := open(t, h)
	terms := engine.Terms{DeleteAtHeight: 9}
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: put([]byte("0123456789"), terms)})
	other := engine.Terms{UnminedSince: 3}
	for _, tc := range []struct {
		name  string
		edits []engine.Edit
		want  engine.EditError
	}{
		{"past the end", []engine.Edit{{Offset: 8, Bytes: []byte("abc")}}, engine.EditError{Offset: 8, Len: 3, ValueLen: 10}},
		{"a good edit, then a bad one", []engine.Edit{{Offset: 0, Bytes: []byte("ok")}, {Offset: 11, Bytes: nil}}, engine.EditError{Offset: 11, Len: 0, ValueLen: 10}},
		{"a negative offset", []engine.Edit{{Offset: -1, Bytes: []byte("x")}}, engine.EditError{Offset: -1, Len: 1, ValueLen: 10}},
		{"longer than the value", []engine.Edit{{Offset: 0, Bytes: []byte("0123456789!")}}, engine.EditError{Offset: 0, Len: 11, ValueLen: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, err := e.Update(context.Background(), []engine.Update{
				{Key: K(1), Fn: patchWith(tc.edits, other, nil)},
				{Key: K(2), Fn: put([]byte(tc.name), engine.Terms{})},
			})
			if err != nil {
				t.Fatal(err)
			}
			var ee *engine.EditError
			if !errors.As(errs[0], &ee) || *ee != tc.want || errs[1] != nil {
				t.Fatalf("errs = %v, want [%v <nil>]", errs, &tc.want)
			}
			got := mustGet(t, e, K(1), K(2))
			if string(got[0]) != "0123456789" || string(got[1]) != tc.name {
				t.Fatalf("got %q: the refused patch must leave its record, the other update must apply", got)
			}
			if got := scanAll(t, e, engine.ByDeleteAtHeight, 0, 100); len(got) != 1 || got[K(1)] != 9 {
				t.Fatalf("the refused patch changed the terms: %v", got)
			}
			if got := scanAll(t, e, engine.ByUnminedSince, 0, 100); len(got) != 0 {
				t.Fatalf("the refused patch indexed its terms: %v", got)
			}
		})
	}
	// Zero bytes at the very end lie within the value.
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: patchWith([]engine.Edit{{Offset: 10}}, terms, nil)})
}

// A patch of a missing record fails with engine.ErrNothingToPatch and
// creates nothing: no record, no index entry.
func testPatchMissing(t *testing.T, h Harness) {
	e, _ := open(t, h)
	errs, err := e.Update(context.Background(), []engine.Update{
		{Key: K(1), Fn: patchWith(nil, engine.Terms{UnminedSince: 4}, nil)},
		{Key: K(2), Fn: patchWith([]engine.Edit{{Offset: 0, Bytes: []byte("x")}}, engine.Terms{DeleteAtHeight: 4}, nil)},
		// Removed earlier in the same batch: missing again by the patch.
		{Key: K(3), Fn: put([]byte("gone soon"), engine.Terms{})},
		{Key: K(3), Fn: func([]byte) (engine.Mutation, error) { return engine.Mutation{Action: engine.Remove}, nil }},
		{Key: K(3), Fn: patchWith([]engine.Edit{{Offset: 0, Bytes: []byte("x")}}, engine.Terms{PreserveUntil: 4}, nil)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 4} {
		if !errors.Is(errs[i], engine.ErrNothingToPatch) {
			t.Fatalf("update %d, a patch of a missing record: %v, want ErrNothingToPatch", i, errs[i])
		}
	}
	if errs[2] != nil || errs[3] != nil {
		t.Fatalf("errs = %v", errs)
	}
	for i, v := range mustGet(t, e, K(1), K(2), K(3)) {
		if v != nil {
			t.Fatalf("key %d: a patch of nothing made %q", i+1, v)
		}
	}
	if got := forEachValues(t, e); len(got) != 0 {
		t.Fatalf("ForEach sees %d records after patches of nothing", len(got))
	}
	for _, idx := range engine.Indexes {
		if got := scanAll(t, e, idx, 0, ^uint32(0)); len(got) != 0 {
			t.Fatalf("%v index after patches of nothing: %v", idx, got)
		}
	}
}

// Updates of one key in one batch see the patches before them: two
// patches compose, a patch applies to what a Put of the same batch
// stored (over a record or over nothing), and a Put after a patch
// replaces the patched value.
func testPatchesInBatch(t *testing.T, h Harness) {
	e, _ := open(t, h)
	mustUpdate(t, e, engine.Update{Key: K(1), Fn: put([]byte("aaaaaaaaaa"), engine.Terms{ProducedAt: 1})},
		engine.Update{Key: K(3), Fn: put([]byte("old value"), engine.Terms{})})
	var sawSecond, sawAfterPut []byte
	mustUpdate(t, e,
		engine.Update{Key: K(1), Fn: patchWith([]engine.Edit{{Offset: 0, Bytes: []byte("XXXX")}}, engine.Terms{UnminedSince: 5}, nil)},
		engine.Update{Key: K(1), Fn: patchWith([]engine.Edit{{Offset: 2, Bytes: []byte("YYYY")}}, engine.Terms{UnminedSince: 6}, &sawSecond)},
		engine.Update{Key: K(2), Fn: put([]byte("created in the batch"), engine.Terms{})},
		engine.Update{Key: K(2), Fn: patchWith([]engine.Edit{{Offset: 0, Bytes: []byte("CREATED")}}, engine.Terms{PreserveUntil: 8}, nil)},
		engine.Update{Key: K(3), Fn: put([]byte("a new, longer value"), engine.Terms{})},
		engine.Update{Key: K(3), Fn: patchWith([]engine.Edit{{Offset: 13, Bytes: []byte("VALUE!")}}, engine.Terms{}, &sawAfterPut)},
		engine.Update{Key: K(4), Fn: put([]byte("put"), engine.Terms{})},
		engine.Update{Key: K(4), Fn: patchWith([]engine.Edit{{Offset: 0, Bytes: []byte("PAT")}}, engine.Terms{}, nil)},
		engine.Update{Key: K(4), Fn: put([]byte("put again"), engine.Terms{DeleteAtHeight: 3})},
	)
	if string(sawSecond) != "XXXXaaaaaa" {
		t.Fatalf("the second patch of a key was lent %q, not the first's result", sawSecond)
	}
	if string(sawAfterPut) != "a new, longer value" {
		t.Fatalf("a patch after a put of the same batch was lent %q", sawAfterPut)
	}
	got := mustGet(t, e, K(1), K(2), K(3), K(4))
	for i, want := range []string{"XXYYYYaaaa", "CREATED in the batch", "a new, longerVALUE!", "put again"} {
		if string(got[i]) != want {
			t.Fatalf("key %d: %q, want %q", i+1, got[i], want)
		}
	}
	if got := scanAll(t, e, engine.ByUnminedSince, 0, 100); len(got) != 1 || got[K(1)] != 6 {
		t.Fatalf("unminedSince index after two patches: %v, want the second's term", got)
	}
	if got := scanAll(t, e, engine.ByPreserveUntil, 0, 100); len(got) != 1 || got[K(2)] != 8 {
		t.Fatalf("preserveUntil index after a put and a patch: %v", got)
	}
	if got := scanAll(t, e, engine.ByDeleteAtHeight, 0, 100); len(got) != 1 || got[K(4)] != 3 {
		t.Fatalf("deleteAtHeight index after a patch and a put: %v", got)
	}
}
