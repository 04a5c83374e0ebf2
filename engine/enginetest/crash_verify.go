package enginetest

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/utxostore/utxostore/engine"
)

// crashState is one possible state of a key: its value (nil: absent) after
// op, or at the start of the round when op is 0.
type crashState struct {
	op    uint64
	value []byte
}

// predictRound replays ops from..to on a copy of the verified start state
// and returns, for every key an op touched, the sequence of states it went
// through. Ops act on each key independently, so an engine that recovers a
// different point for different keys is still judged exactly.
func predictRound(seed int64, keySpace int, start map[engine.Key][]byte, from, to uint64) map[engine.Key][]crashState {
	model := make(map[engine.Key][]byte, len(start))
	for k, v := range start {
		model[k] = v
	}
	hist := make(map[engine.Key][]crashState)
	for n := from; n <= to; n++ {
		for _, k := range genCrashOp(seed, n, keySpace).predict(model) {
			if hist[k] == nil {
				hist[k] = []crashState{{0, start[k]}}
			}
			hist[k] = append(hist[k], crashState{n, model[k]})
		}
	}
	return hist
}

// crashCheck is the outcome of comparing a recovered store to the
// prediction.
type crashCheck struct {
	lost     int // keys that lost an acknowledged op
	inFlight int // keys that show the unacknowledged op in flight at the kill
	problems []string
}

// judge compares what the store holds with what it may hold: for every key,
// a state at or after the last acknowledged op that touched it. durable is
// the last acknowledged op; inFlight the op that may have been under way.
func judge(observed map[engine.Key][]byte, start map[engine.Key][]byte, hist map[engine.Key][]crashState, keys []engine.Key, durable, inFlight uint64) crashCheck {
	var c crashCheck
	for _, k := range keys {
		states := hist[k]
		if states == nil {
			states = []crashState{{0, start[k]}}
		}
		first := 0 // the state after the last acknowledged op
		for i, s := range states {
			if s.op <= durable {
				first = i
			}
		}
		got := observed[k]
		match := -1
		for i := len(states) - 1; i >= 0; i-- {
			if sameValue(states[i].value, got) {
				match = i
				break
			}
		}
		switch {
		case match >= first:
			if s := states[match]; s.op == inFlight && !sameValue(states[match-1].value, got) {
				c.inFlight++
			}
		case match >= 0:
			c.lost++
			c.problems = append(c.problems, fmt.Sprintf("key %s: lost acknowledged op %d: holds %s, the state after op %d",
				keyName(k), states[first].op, describe(got), states[match].op))
		default:
			c.problems = append(c.problems, fmt.Sprintf("key %s: holds %s, which no op of the stream could have left there; its possible states this round: %s",
				keyName(k), describe(got), describeStates(states)))
		}
	}
	return c
}

func sameValue(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func keyName(k engine.Key) string {
	if k == crashMetaKey {
		return "meta:" + crashMetaName
	}
	return fmt.Sprintf("%x", k[24:])
}

func describe(v []byte) string {
	if v == nil {
		return "nothing"
	}
	cv, err := decodeCrashValue(v)
	if err != nil {
		return fmt.Sprintf("an undecodable %d-byte value (%v)", len(v), err)
	}
	switch {
	case cv.slot == metaSlot:
		return fmt.Sprintf("the metadata of op %d", cv.op)
	case cv.prev == noPrev:
		return fmt.Sprintf("the value of op %d slot %d, written over nothing", cv.op, cv.slot)
	}
	return fmt.Sprintf("the value of op %d slot %d, written over the value of op %d", cv.op, cv.slot, cv.prev)
}

// describeStates lists a key's possible states, so that a value no op
// could have left can be told apart: which op's update saw what.
func describeStates(states []crashState) string {
	var parts []string
	for i, s := range states {
		if i > 0 && s.op == states[i-1].op {
			continue // an op that touched the key twice: its final state is listed
		}
		when := "at the start"
		if s.op != 0 {
			when = fmt.Sprintf("after op %d", s.op)
		}
		parts = append(parts, when+": "+describe(s.value))
	}
	return strings.Join(parts, "; ")
}

// observeCrashStore reads everything the store holds and checks what needs
// no prediction: every value decodes with a valid checksum under its own
// key, Get agrees with ForEach, and each index holds exactly the keys and
// terms that the records' values say they were written with. It returns
// the records and the metadata entry (under crashMetaKey).
func observeCrashStore(ctx context.Context, e engine.Engine, keys []engine.Key) (map[engine.Key][]byte, []string) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	inSpace := make(map[engine.Key]bool, len(keys))
	for _, k := range keys {
		inSpace[k] = true
	}

	observed := make(map[engine.Key][]byte)
	wantIndex := make(map[engine.Index]map[engine.Key]uint32)
	for _, idx := range engine.Indexes {
		wantIndex[idx] = make(map[engine.Key]uint32)
	}
	err := e.ForEach(ctx, func(k engine.Key, v []byte) error {
		if _, dup := observed[k]; dup {
			bad("ForEach returned key %s twice", keyName(k))
		}
		observed[k] = append([]byte(nil), v...)
		cv, err := decodeCrashValue(v)
		switch {
		case err != nil:
			bad("key %s: %v", keyName(k), err)
		case !inSpace[k]:
			bad("key %x is outside the key space", k)
		case cv.key != k || cv.slot == metaSlot:
			bad("key %s holds %s, written for key %s", keyName(k), describe(v), keyName(cv.key))
		default:
			for _, idx := range engine.Indexes {
				if term := idx.Term(cv.terms); term != 0 {
					wantIndex[idx][k] = term
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, []string{fmt.Sprintf("ForEach: %v", err)}
	}

	got, err := e.Get(ctx, keys)
	if err != nil {
		return nil, []string{fmt.Sprintf("Get: %v", err)}
	}
	for i, k := range keys {
		if !sameValue(got[i], observed[k]) {
			bad("key %s: Get returns %s, ForEach %s", keyName(k), describe(got[i]), describe(observed[k]))
		}
	}

	for _, idx := range engine.Indexes {
		for _, r := range [][2]uint32{{0, math.MaxUint32}, {10, 30}} {
			want := make(map[engine.Key]uint32)
			for k, term := range wantIndex[idx] {
				if term >= r[0] && term <= r[1] {
					want[k] = term
				}
			}
			have := make(map[engine.Key]uint32)
			err := e.Scan(ctx, idx, r[0], r[1], func(k engine.Key, term uint32) error {
				if _, dup := have[k]; dup {
					bad("scan %v returned key %s twice", idx, keyName(k))
				}
				have[k] = term
				return nil
			})
			if err != nil {
				return nil, []string{fmt.Sprintf("scan %v: %v", idx, err)}
			}
			problems = append(problems, diffIndex(idx, r, want, have)...)
		}
	}

	meta, err := e.GetMeta(ctx, crashMetaName)
	if err != nil {
		return nil, []string{fmt.Sprintf("GetMeta: %v", err)}
	}
	if meta != nil {
		if cv, err := decodeCrashValue(meta); err != nil || cv.slot != metaSlot {
			bad("metadata %q: %s", crashMetaName, describe(meta))
		}
		observed[crashMetaKey] = meta
	}
	return observed, problems
}

func diffIndex(idx engine.Index, r [2]uint32, want, have map[engine.Key]uint32) []string {
	var out []string
	for k, term := range want {
		if got, ok := have[k]; !ok || got != term {
			out = append(out, fmt.Sprintf("index %v [%d,%d]: key %s has term %d in its value, index says %d (present %v)", idx, r[0], r[1], keyName(k), term, got, ok))
		}
	}
	for k, term := range have {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("index %v [%d,%d]: stale entry for key %s at term %d", idx, r[0], r[1], keyName(k), term))
		}
	}
	sort.Strings(out)
	return out
}
