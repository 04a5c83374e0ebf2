package enginetest

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
)

func TestCrashValueRoundTrip(t *testing.T) {
	v := crashValue{op: 42, slot: 3, key: K(7), terms: engine.Terms{UnminedSince: 1, DeleteAtHeight: 2, PreserveUntil: 3, ProducedAt: 4, Consumed: true}, prev: 9}
	b := v.encode(100)
	got, err := decodeCrashValue(b)
	if err != nil || got != v {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, i := range []int{0, 10, len(b) / 2, len(b) - 1} {
		c := append([]byte(nil), b...)
		c[i] ^= 1
		if _, err := decodeCrashValue(c); err == nil {
			t.Errorf("a flipped bit at %d went unnoticed", i)
		}
	}
	if _, err := decodeCrashValue(b[:len(b)-1]); err == nil {
		t.Error("a truncated value went unnoticed")
	}
}

// The stream is a pure function of (seed, n).
func TestCrashOpsAreDeterministic(t *testing.T) {
	a, b := map[engine.Key][]byte{}, map[engine.Key][]byte{}
	for n := uint64(1); n <= 500; n++ {
		genCrashOp(5, n, 64).predict(a)
		genCrashOp(5, n, 64).predict(b)
	}
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("models differ or are empty: %d and %d keys", len(a), len(b))
	}
	for k, v := range a {
		if !sameValue(v, b[k]) {
			t.Fatalf("key %s differs", keyName(k))
		}
	}
}

// judge must accept any per-key state at or after the acknowledged one, and
// count a store that went back in time as losing ops.
func TestCrashJudge(t *testing.T) {
	const seed, space = 3, 32
	keys := append(crashKeys(space), crashMetaKey)
	start := map[engine.Key][]byte{}
	hist := predictRound(seed, space, start, 1, 200)
	after := func(n uint64) map[engine.Key][]byte {
		m := map[engine.Key][]byte{}
		for i := uint64(1); i <= n; i++ {
			genCrashOp(seed, i, space).predict(m)
		}
		return m
	}
	if c := judge(after(200), start, hist, keys, 199, 200); len(c.problems) != 0 {
		t.Fatalf("the complete state was judged wrong: %v", c.problems)
	}
	if c := judge(after(199), start, hist, keys, 199, 200); len(c.problems) != 0 {
		t.Fatalf("the state without the op in flight was judged wrong: %v", c.problems)
	}
	if c := judge(after(120), start, hist, keys, 199, 200); c.lost == 0 {
		t.Fatal("a store that lost 79 acknowledged ops passed")
	}
	swapped := after(200)
	var some []engine.Key
	for _, k := range keys[:space] {
		if swapped[k] != nil {
			some = append(some, k)
		}
	}
	swapped[some[0]], swapped[some[1]] = swapped[some[1]], swapped[some[0]]
	if c := judge(swapped, start, hist, keys, 199, 200); len(c.problems) == 0 {
		t.Fatal("values swapped between keys passed")
	}
}

// A key left between two updates of it in one op (a torn batch) holds a
// value no state of the stream has: judge must flag it and say what the
// value was written over.
func TestCrashJudgeFlagsAHalfAppliedOp(t *testing.T) {
	const seed, space = 3, 32
	keys := append(crashKeys(space), crashMetaKey)
	start := map[engine.Key][]byte{}
	hist := predictRound(seed, space, start, 1, 400)
	model := map[engine.Key][]byte{}
	for n := uint64(1); n <= 400; n++ {
		op := genCrashOp(seed, n, space)
		if first, ok := twicePut(op); ok {
			half := maps.Clone(model)
			for i := 0; i <= first; i++ {
				u := op.updates[i]
				if m, err := u.fn(n, i)(half[u.key]); err == nil && m.Action == engine.Put {
					half[u.key] = m.Value
				} else if err == nil && m.Action == engine.Remove {
					delete(half, u.key)
				}
			}
			c := judge(half, start, hist, keys, n-1, 400)
			if msg := strings.Join(c.problems, "\n"); !strings.Contains(msg, "no op of the stream") || !strings.Contains(msg, "written over") {
				t.Fatalf("op %d applied through update %d of the key it puts twice: %q", n, first, msg)
			}
			return
		}
		op.predict(model)
	}
	t.Fatal("no op of the stream puts one key twice")
}

// twicePut finds in op a put of a key that a later put of the op
// overwrites, and returns the first's position.
func twicePut(op crashOp) (int, bool) {
	if op.kind != kindUpdate {
		return 0, false
	}
	for i, u := range op.updates {
		if u.verb != verbPut {
			continue
		}
		for _, v := range op.updates[i+1:] {
			if v.key == u.key && v.verb == verbPut {
				return i, true
			}
		}
	}
	return 0, false
}

// observeCrashStore must catch a bad checksum and an index that disagrees
// with the terms a value was written with.
func TestObserveCrashStore(t *testing.T) {
	ctx := context.Background()
	keys := crashKeys(8)
	load := func() *memory.Engine {
		e := memory.New()
		for i, k := range keys {
			terms := engine.Terms{DeleteAtHeight: uint32(i + 1)}
			mustUpdate(t, e, engine.Update{Key: k, Fn: put(crashValue{op: uint64(i + 1), key: k, terms: terms, prev: noPrev}.encode(10), terms)})
		}
		return e
	}
	if _, problems := observeCrashStore(ctx, load(), keys); len(problems) != 0 {
		t.Fatalf("a sound store: %v", problems)
	}

	e := load()
	v := mustGet(t, e, keys[0])[0]
	v[len(v)-6] ^= 0xFF
	mustUpdate(t, e, engine.Update{Key: keys[0], Fn: put(v, engine.Terms{DeleteAtHeight: 1})})
	if _, problems := observeCrashStore(ctx, e, keys); !strings.Contains(strings.Join(problems, "\n"), "checksum") {
		t.Fatalf("a corrupt value went unnoticed: %v", problems)
	}

	e = load()
	good := mustGet(t, e, keys[1])[0]
	mustUpdate(t, e, engine.Update{Key: keys[1], Fn: put(good, engine.Terms{DeleteAtHeight: 99})})
	if _, problems := observeCrashStore(ctx, e, keys); len(problems) == 0 {
		t.Fatal("an index entry that disagrees with the value's terms went unnoticed")
	}
}

func TestCrashAckLinesParse(t *testing.T) {
	for _, c := range []struct {
		line string
		want crashAck
	}{
		{"op 12", crashAck{kind: ackOp, n: 12, text: "op 12"}},
		{"checkpoint 16", crashAck{kind: ackCheckpoint, n: 16, text: "checkpoint 16"}},
		{"failed op 9: op 9: update: file too large", crashAck{kind: ackFailedOp, n: 9, text: "failed op 9: op 9: update: file too large"}},
		{"failed checkpoint 32: sozu: checkpoint 3: file too large", crashAck{kind: ackFailedCheckpoint, n: 32, text: "failed checkpoint 32: sozu: checkpoint 3: file too large"}},
		{"closed: ok", crashAck{kind: ackClosed, text: "closed: ok"}},
	} {
		if got := parseCrashAck(c.line); got != c.want {
			t.Errorf("parseCrashAck(%q) = %+v, want %+v", c.line, got, c.want)
		}
	}
	for _, line := range []string{"", "op", "op x", "op 12 extra", "opp 12", "failed op", "checkpoint -1", "closed"} {
		if got := parseCrashAck(line); got.err == nil {
			t.Errorf("parseCrashAck(%q) = %+v, want an error", line, got)
		}
	}
}
