package enginetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// Differential drives the same seeded random operation sequence through the
// reference and the subject engine and fails at the first result that
// differs: a value, a per-update error, a CreateOnly outcome, a scan or a
// full listing.
func Differential(t *testing.T, reference, subject engine.Engine, seed int64, ops int) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewSource(seed))
	// A small key space so that operations collide on the same records.
	const keySpace = 512
	key := func() engine.Key { return K(uint64(rng.Intn(keySpace))) }

	for op := 0; op < ops; op++ {
		switch r := rng.Intn(100); {
		case r < 55:
			var keys []engine.Key
			if rng.Intn(32) == 0 {
				// Now and then a large batch of distinct keys, which an
				// engine may split among goroutines (the memory engine
				// among processors, Sozu among its shards).
				for _, n := range rng.Perm(keySpace)[:128+rng.Intn(256)] {
					keys = append(keys, K(uint64(n)))
				}
			} else {
				keys = make([]engine.Key, 1+rng.Intn(8))
				for i := range keys {
					keys[i] = key()
				}
			}
			batch := randomBatch(rng, keys, op)
			errsA, errA := reference.Update(ctx, batch)
			errsB, errB := subject.Update(ctx, batch)
			if errA != nil || errB != nil {
				t.Fatalf("op %d: update failed: reference %v, subject %v", op, errA, errB)
			}
			for i := range batch {
				if fmt.Sprint(errsA[i]) != fmt.Sprint(errsB[i]) {
					t.Fatalf("op %d: update %d: reference error %v, subject error %v", op, i, errsA[i], errsB[i])
				}
			}
		case r < 75:
			keys := make([]engine.Key, 1+rng.Intn(16))
			for i := range keys {
				keys[i] = key()
			}
			a, errA := reference.Get(ctx, keys)
			b, errB := subject.Get(ctx, keys)
			if errA != nil || errB != nil {
				t.Fatalf("op %d: get failed: %v %v", op, errA, errB)
			}
			for i := range keys {
				if string(a[i]) != string(b[i]) || (a[i] == nil) != (b[i] == nil) {
					t.Fatalf("op %d: key %x: reference %x, subject %x", op, keys[i], a[i], b[i])
				}
			}
		case r < 85:
			k, v := key(), []byte(fmt.Sprintf("created-%d", op))
			errA := reference.CreateOnly(ctx, k, v, 0)
			errB := subject.CreateOnly(ctx, k, v, 0)
			if errors.Is(errA, engine.ErrExists) != errors.Is(errB, engine.ErrExists) ||
				(errA != nil && !errors.Is(errA, engine.ErrExists)) || (errB != nil && !errors.Is(errB, engine.ErrExists)) {
				t.Fatalf("op %d: CreateOnly: reference %v, subject %v", op, errA, errB)
			}
		case r < 92:
			keys := []engine.Key{key(), key()}
			if err := errors.Join(reference.Delete(ctx, keys), subject.Delete(ctx, keys)); err != nil {
				t.Fatalf("op %d: delete: %v", op, err)
			}
		case r < 99:
			idx := engine.Indexes[rng.Intn(len(engine.Indexes))]
			lo := uint32(rng.Intn(60))
			hi := lo + uint32(rng.Intn(60))
			if a, b := scanList(t, reference, idx, lo, hi), scanList(t, subject, idx, lo, hi); a != b {
				t.Fatalf("op %d: scan %v [%d,%d]:\nreference %s\nsubject   %s", op, idx, lo, hi, a, b)
			}
		default:
			if a, b := listing(t, reference), listing(t, subject); a != b {
				t.Fatalf("op %d: the engines' contents differ", op)
			}
		}
	}
	if a, b := listing(t, reference), listing(t, subject); a != b {
		t.Fatal("the engines' final contents differ")
	}
}

var errRefused = errors.New("refused")

// randomBatch builds a batch whose functions are pure in the current value,
// so both engines compute the same results however often they are called.
func randomBatch(rng *rand.Rand, keys []engine.Key, op int) []engine.Update {
	batch := make([]engine.Update, len(keys))
	for i := range batch {
		salt := fmt.Sprintf("%d/%d", op, i)
		terms := engine.Terms{
			UnminedSince:   randomTerm(rng),
			DeleteAtHeight: randomTerm(rng),
			PreserveUntil:  randomTerm(rng),
			ProducedAt:     uint32(rng.Intn(100)),
			Consumed:       rng.Intn(2) == 0,
		}
		var fn engine.UpdateFunc
		switch rng.Intn(10) {
		case 0:
			fn = func([]byte) (engine.Mutation, error) { return engine.Mutation{Action: engine.Remove}, nil }
		case 1:
			fn = func([]byte) (engine.Mutation, error) { return engine.Mutation{Action: engine.Keep}, nil }
		case 2:
			fn = func(cur []byte) (engine.Mutation, error) {
				if cur == nil {
					return engine.Mutation{}, errRefused
				}
				return engine.Mutation{Action: engine.Put, Value: append(cur[:len(cur):len(cur)], 'x'), Terms: terms}, nil
			}
		default:
			size := 1 + rng.Intn(200)
			if rng.Intn(200) == 0 {
				size = 6000 + rng.Intn(20000) // beyond one page
			}
			fn = func(cur []byte) (engine.Mutation, error) {
				sum := sha256.Sum256(append([]byte(salt), cur...))
				v := make([]byte, size)
				for j := range v {
					v[j] = sum[j%len(sum)]
				}
				return engine.Mutation{Action: engine.Put, Value: v, Terms: terms}, nil
			}
		}
		batch[i] = engine.Update{Key: keys[i], Fn: fn}
	}
	return batch
}

func randomTerm(rng *rand.Rand) uint32 {
	if rng.Intn(3) == 0 {
		return 0
	}
	return uint32(1 + rng.Intn(100))
}

func scanList(t *testing.T, e engine.Engine, idx engine.Index, lo, hi uint32) string {
	t.Helper()
	var lines []string
	err := e.Scan(context.Background(), idx, lo, hi, func(k engine.Key, term uint32) error {
		lines = append(lines, fmt.Sprintf("%x:%d", k, term))
		return nil
	})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	sort.Strings(lines)
	return fmt.Sprint(lines)
}

func listing(t *testing.T, e engine.Engine) string {
	t.Helper()
	var lines []string
	err := e.ForEach(context.Background(), func(k engine.Key, v []byte) error {
		sum := sha256.Sum256(v)
		lines = append(lines, fmt.Sprintf("%x:%x", k, sum[:8]))
		return nil
	})
	if err != nil {
		t.Fatalf("for each: %v", err)
	}
	sort.Strings(lines)
	return fmt.Sprint(lines)
}
