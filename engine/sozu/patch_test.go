package sozu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// spendLike is value with a counter near its start changed and 36 bytes
// added after the 33 bytes at at, as a spend changes a record.
func spendLike(value []byte, at int) []byte {
	next := slices.Clone(value)
	next[5]++
	return slices.Insert(next, at+33, bytes.Repeat([]byte{0xAB}, 36)...)
}

func TestEditsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	record := random(600)
	for _, tc := range []struct {
		name     string
		old, new []byte
		maxEdits int // the most bytes the edits may take
	}{
		{"equal values", record, slices.Clone(record), 0},
		{"both empty", []byte{}, []byte{}, 0},
		{"grows at the end", record, append(slices.Clone(record), 1, 2, 3), 7},
		{"grows at the start", record, append([]byte{1, 2, 3}, record...), 6},
		{"grows in the middle (empty middle of the old value)", record, slices.Insert(slices.Clone(record), 300, 9, 9), 6},
		{"shrinks at the end", record, record[:590], 4},
		{"shrinks at the start", record, record[10:], 4},
		{"shrinks in the middle (empty middle of the new value)", record, slices.Delete(slices.Clone(record), 200, 260), 4},
		{"one byte rewritten", record, func() []byte { v := slices.Clone(record); v[100] ^= 1; return v }(), 5},
		{"a spend: counter and an output", record, spendLike(record, 500), 60},
		{"a field rewritten in place and the value shortened", record, func() []byte {
			v := slices.Clone(record[:550])
			copy(v[40:], "mined")
			return v
		}(), 20},
		{"from empty", []byte{}, record, 610},
		{"to empty", record, []byte{}, 4},
		{"completely different", record, random(600), 610},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edits := appendEdits(nil, tc.old, tc.new)
			got, err := applyEdits(nil, tc.old, edits)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.new) {
				t.Fatalf("the edits (%d bytes) make %d bytes that differ from the %d of the new value", len(edits), len(got), len(tc.new))
			}
			if len(edits) > tc.maxEdits {
				t.Fatalf("the edits take %d bytes, want at most %d", len(edits), tc.maxEdits)
			}
		})
	}
	// Random edits of random values; of four-letter values half the time,
	// which repeat runs of bytes at other offsets.
	for i := range 20000 {
		letters := 256
		if i%2 == 0 {
			letters = 4
		}
		some := func(n int) []byte {
			b := random(n)
			for j := range b {
				b[j] = byte(int(b[j]) % letters)
			}
			return b
		}
		old := some(rng.IntN(300))
		next := slices.Clone(old)
		for range rng.IntN(5) {
			at := rng.IntN(len(next) + 1)
			switch rng.IntN(3) {
			case 0:
				next = slices.Insert(next, at, some(rng.IntN(40))...)
			case 1:
				next = slices.Delete(next, at, min(len(next), at+rng.IntN(40)))
			default:
				copy(next[at:], some(rng.IntN(20)))
			}
		}
		got, err := applyEdits(nil, old, appendEdits(nil, old, next))
		if err != nil || !bytes.Equal(got, next) {
			t.Fatalf("case %d: %v; the edits of %x into %x make %x", i, err, old, next, got)
		}
	}
}

// Edits that reach past the old value are refused, not applied in part.
func TestEditsPastTheOldValueAreRefused(t *testing.T) {
	old := []byte("0123456789")
	for _, edits := range [][]byte{
		appendEdit(nil, 11, 0, nil),
		appendEdit(nil, 5, 6, nil),
		appendEdit(appendEdit(nil, 5, 0, nil), 6, 0, nil),
		append(appendEdit(nil, 0, 0, []byte("abc")), 0)[:4], // the insert cut short
		{0x80},
	} {
		if got, err := applyEdits(nil, old, edits); err == nil {
			t.Fatalf("edits %x applied to %q: %q, want an error", edits, old, got)
		}
	}
}

// logUpdate writes a patch when the edits save more than half of the new
// value, and the whole value otherwise.
func TestLogUpdateChoosesPatchOrWholeValue(t *testing.T) {
	old := bytes.Repeat([]byte("record "), 90)
	other := bytes.Repeat([]byte("RECORD!"), 90)
	e := entry{key: enginetest.K(1), terms: engine.Terms{ProducedAt: 7, UnminedSince: 3}}
	for _, tc := range []struct {
		name     string
		old, new []byte
		want     byte
	}{
		{"a few bytes changed", old, spendLike(old, 400), walPatch},
		{"no base", nil, old, walPut},
		{"completely different", old, other, walPut},
		{"a short value", []byte("abcd"), []byte("abce"), walPut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := logRecords{shard: 2}
			w.logUpdate(&e, tc.old, tc.new)
			body := w.buf[walHeaderSize:]
			if n := int(binary.LittleEndian.Uint32(w.buf)); n != len(body) {
				t.Fatalf("one record of %d bytes, its header says %d", len(body), n)
			}
			if body[0] != tc.want || body[1] != 2 {
				t.Fatalf("record of kind %d for shard %d, want kind %d for shard 2", body[0], body[1], tc.want)
			}
			if tc.want == walPut {
				return
			}
			if len(body) > len(tc.new)/2 {
				t.Fatalf("a patch of %d bytes for a value of %d", len(body), len(tc.new))
			}
			got, base, edits, err := decodePatch(body[2:])
			if err != nil {
				t.Fatal(err)
			}
			if got.key != e.key || got.terms != e.terms || base.length != uint64(len(tc.old)) || base.sum != checksum(tc.old) {
				t.Fatalf("decoded %+v with base %+v", got, base)
			}
			if value, err := applyEdits(nil, tc.old, edits); err != nil || !bytes.Equal(value, tc.new) {
				t.Fatalf("the patch makes %q (%v)", value, err)
			}
		})
	}
}

// patchedValue is version round of key i's value: small values stay
// inline, large ones (over tinyOptions' InlineMax) go out of line. Each
// round changes a few bytes of the one before: a counter near the start,
// and 36 bytes added or taken near the end in turn.
func patchedValue(i, round int) []byte {
	size := 90
	if i%2 == 1 {
		size = 700
	}
	v := make([]byte, size)
	for j := range v {
		v[j] = byte(i*7 + j*13)
	}
	for r := 1; r <= round; r++ {
		v[5] = byte(r)
		if r%2 == 1 {
			v = slices.Insert(v, len(v)-20, bytes.Repeat([]byte{byte(r)}, 36)...)
		} else {
			v = slices.Delete(v, len(v)-56, len(v)-20)
		}
	}
	return v
}

// patchRound is round of patchedValue as updates of keys [0, n), each of
// which checks the value it replaces.
func patchRound(n, round int) []engine.Update {
	batch := make([]engine.Update, n)
	for i := range batch {
		batch[i] = engine.Update{Key: enginetest.K(uint64(i)), Fn: func(current []byte) (engine.Mutation, error) {
			if want := patchedValue(i, round-1); round > 0 && !bytes.Equal(current, want) {
				return engine.Mutation{}, errors.New("the update was handed another value than the last one stored")
			}
			return engine.Mutation{Action: engine.Put, Value: patchedValue(i, round), Terms: engine.Terms{ProducedAt: uint32(round)}}, nil
		}}
	}
	return batch
}

func writePatchRounds(t *testing.T, e *Engine, n, from, to int) {
	t.Helper()
	for round := from; round < to; round++ {
		errs, err := e.Update(context.Background(), patchRound(n, round))
		if err == nil {
			err = errors.Join(errs...)
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

func checkPatchRound(t *testing.T, e *Engine, n, round int) {
	t.Helper()
	got, err := e.Get(context.Background(), firstKeys(n))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if !bytes.Equal(v, patchedValue(i, round)) {
			t.Fatalf("key %d holds %d bytes that are not the %d of round %d", i, len(v), len(patchedValue(i, round)), round)
		}
	}
}

// logKinds counts the records of each kind in the log of generation gen.
func logKinds(t *testing.T, dir string, gen uint64) map[byte]int {
	t.Helper()
	kinds := map[byte]int{}
	if _, err := readLog(logPath(dir, gen), gen, func(body []byte) error { kinds[body[0]]++; return nil }); err != nil {
		t.Fatal(err)
	}
	return kinds
}

// Updates that change a few bytes of small (inline) and large (out of
// line) values are logged as patches, and a replay after a crash, read-only
// or not, rebuilds exactly the values they wrote.
func TestPatchedUpdatesReplay(t *testing.T) {
	dir := t.TempDir()
	const n, rounds = 40, 8
	e := openFor(t, dir, tinyOptions())
	writePatchRounds(t, e, n, 0, rounds)
	checkPatchRound(t, e, n, rounds-1)
	gen := e.gen
	e.abandon()
	kinds := logKinds(t, dir, gen)
	t.Logf("log records by kind: %v", kinds)
	if kinds[walPatch] < n*(rounds-2) {
		t.Fatalf("%d patch records for %d updates of values that changed a few bytes", kinds[walPatch], n*(rounds-1))
	}

	o := tinyOptions()
	o.ReadOnly = true
	ro := openFor(t, dir, o)
	checkPatchRound(t, ro, n, rounds-1)
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	e = openFor(t, dir, tinyOptions())
	if rep := stats(t, e).Recovery; rep.DroppedBytes != 0 {
		t.Fatalf("recovery dropped %d bytes: %s", rep.DroppedBytes, rep.Detail)
	}
	checkPatchRound(t, e, n, rounds-1)
	// Patches of values the replay rebuilt, across a page checkpoint.
	writePatchRounds(t, e, n, rounds, rounds+2)
	pageCheckpoint(t, e)
	writePatchRounds(t, e, n, rounds+2, rounds+4)
	e.abandon()
	e = openFor(t, dir, tinyOptions())
	defer e.Close()
	checkPatchRound(t, e, n, rounds+3)
}

// A patch whose base in the replayed table is not the value it was made
// against (here: the put before it changed, its record's checksum made to
// match) fails the open with a CorruptionError instead of storing a wrong
// value.
func TestPatchOfAnotherBaseIsCorruption(t *testing.T) {
	dir := t.TempDir()
	e := openFor(t, dir, tinyOptions())
	writePatchRounds(t, e, 2, 0, 2)
	gen := e.gen
	e.abandon()
	path := logPath(dir, gen)
	if kinds := logKinds(t, dir, gen); kinds[walPatch] != 2 {
		t.Fatalf("log records by kind: %v, want a patch of each key", kinds)
	}
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Change the last byte of the first put's value and restamp it.
	for _, off := range recordOffsets(t, path, logFileHeaderSize) {
		n := walHeaderSize + int(binary.LittleEndian.Uint32(log[off:]))
		record := log[off : off+int64(n)]
		if record[walHeaderSize] != walPut {
			continue
		}
		record[n-1] ^= 0xFF
		binary.LittleEndian.PutUint32(record[4:], checksum(record[8:]))
		break
	}
	if err := os.WriteFile(path, log, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, tinyOptions())
	var corrupt *engine.CorruptionError
	if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), "patch") {
		t.Fatalf("open over a patch of another base: %v, want a CorruptionError naming the patch", err)
	}
	t.Logf("refused: %v", err)
}

// An update of a record that a purge may take without a logged remove (it
// has a delete-at-height, or a time to live) is logged whole: a replay,
// whose purges need not fall where the writer's did, may no longer hold
// the value a patch would be made against.
func TestUpdateOfAPurgeableRecordIsLoggedWhole(t *testing.T) {
	dir := t.TempDir()
	e := openFor(t, dir, tinyOptions())
	value := patchedValue(1, 0)
	dah, ttl := enginetest.K(1), enginetest.K(2)
	if errs, err := e.Update(context.Background(), []engine.Update{{Key: dah, Fn: func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: value, Terms: engine.Terms{DeleteAtHeight: 1000}}, nil
	}}}); err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	if err := e.CreateOnly(context.Background(), ttl, value, time.Hour); err != nil {
		t.Fatal(err)
	}
	update := func(current []byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: spendLike(current, 400)}, nil
	}
	if errs, err := e.Update(context.Background(), []engine.Update{{Key: dah, Fn: update}, {Key: ttl, Fn: update}}); err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	gen := e.gen
	e.abandon()
	if kinds := logKinds(t, dir, gen); kinds[walPatch] != 0 || kinds[walPut] != 4 {
		t.Fatalf("log records by kind: %v, want 4 puts and no patch", kinds)
	}
	e = openFor(t, dir, tinyOptions())
	defer e.Close()
	got, err := e.Get(context.Background(), []engine.Key{dah, ttl})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if !bytes.Equal(v, spendLike(value, 400)) {
			t.Fatalf("record %d: %d bytes, not the update's", i, len(v))
		}
	}
}
