package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// The crash operation stream. Op n is a pure function of (seed, n): the
// child that applies it and the parent that predicts its effect generate
// the same op, and a restarted child can begin anywhere. What an op does to
// a key depends only on that key's current value, so the parent can predict
// every key's possible states one key at a time.

type crashKind uint8

const (
	kindUpdate crashKind = iota
	kindCreate
	kindDelete
	kindMeta
)

type crashVerb uint8

const (
	verbPut          crashVerb = iota // store a new value
	verbPutIfPresent                  // store a new value, refuse when absent
	verbRemove
	verbKeep
)

type crashUpdate struct {
	key   engine.Key
	verb  crashVerb
	terms engine.Terms
	pad   int
}

type crashOp struct {
	n       uint64
	kind    crashKind
	updates []crashUpdate // kindUpdate; kindCreate uses updates[0]
	ttl     time.Duration // kindCreate
	keys    []engine.Key  // kindDelete
	pad     int           // kindMeta
}

// crashMetaName is the metadata entry the stream writes; crashMetaKey is
// the pseudo-key under which the verifier tracks it.
const crashMetaName = "crash-test"

var crashMetaKey = engine.Key{0: 0xFF, 31: 0xFF}

// errCrashRefused is the deliberate refusal of verbPutIfPresent: a
// successful outcome, the record layer saying no.
var errCrashRefused = errors.New("crash test: refused, no record")

func genCrashOp(seed int64, n uint64, keySpace int) crashOp {
	rng := rand.New(rand.NewPCG(uint64(seed), n))
	key := func() engine.Key { return K(uint64(rng.IntN(keySpace))) }
	op := crashOp{n: n}
	switch r := rng.IntN(100); {
	case r < 70:
		op.kind = kindUpdate
		op.updates = make([]crashUpdate, 1+rng.IntN(8))
		for i := range op.updates {
			u := crashUpdate{key: key(), pad: crashPad(rng)}
			switch v := rng.IntN(100); {
			case v < 55:
				u.verb = verbPut
			case v < 70:
				u.verb = verbPutIfPresent
			case v < 88:
				u.verb = verbRemove
			default:
				u.verb = verbKeep
			}
			u.terms = engine.Terms{
				UnminedSince:   crashTerm(rng),
				DeleteAtHeight: crashTerm(rng),
				PreserveUntil:  crashTerm(rng),
				ProducedAt:     uint32(rng.IntN(1000)),
				Consumed:       rng.IntN(2) == 0,
			}
			op.updates[i] = u
		}
	case r < 82:
		op.kind = kindCreate
		op.updates = []crashUpdate{{key: key(), pad: crashPad(rng)}}
		if rng.IntN(3) == 0 {
			op.ttl = time.Hour // long enough never to expire during a test
		}
	case r < 92:
		op.kind = kindDelete
		op.keys = make([]engine.Key, 1+rng.IntN(3))
		for i := range op.keys {
			op.keys[i] = key()
		}
	default:
		op.kind = kindMeta
		op.pad = rng.IntN(64)
	}
	return op
}

// crashPad gives realistic record sizes, and now and then a value large
// enough to take an engine's large-value path.
func crashPad(rng *rand.Rand) int {
	switch r := rng.IntN(1000); {
	case r == 0:
		return 2<<20 + rng.IntN(1<<20)
	case r < 10:
		return 8<<10 + rng.IntN(56<<10)
	default:
		return 20 + rng.IntN(250)
	}
}

func crashTerm(rng *rand.Rand) uint32 {
	if rng.IntN(3) == 0 {
		return 0
	}
	return uint32(1 + rng.IntN(50))
}

// fn is the update function of update slot of op n. It checks the value it
// is handed: a corrupt or misplaced current value fails the update, so the
// child never acknowledges an op built on bad data.
func (u crashUpdate) fn(n uint64, slot int) engine.UpdateFunc {
	return func(current []byte) (engine.Mutation, error) {
		prev := noPrev
		if current != nil {
			v, err := decodeCrashValue(current)
			if err != nil {
				return engine.Mutation{}, fmt.Errorf("op %d: current value of key %x: %w", n, u.key[24:], err)
			}
			if v.key != u.key {
				return engine.Mutation{}, fmt.Errorf("op %d: key %x holds the value of key %x", n, u.key[24:], v.key[24:])
			}
			prev = v.op
		}
		switch u.verb {
		case verbRemove:
			return engine.Mutation{Action: engine.Remove}, nil
		case verbKeep:
			return engine.Mutation{Action: engine.Keep}, nil
		case verbPutIfPresent:
			if current == nil {
				return engine.Mutation{}, errCrashRefused
			}
		}
		v := crashValue{op: n, slot: uint16(slot), key: u.key, terms: u.terms, prev: prev}
		return engine.Mutation{Action: engine.Put, Value: v.encode(u.pad), Terms: u.terms}, nil
	}
}

func (op crashOp) createValue() []byte {
	u := op.updates[0]
	return crashValue{op: op.n, key: u.key, prev: noPrev}.encode(u.pad)
}

func (op crashOp) metaValue() []byte {
	return crashValue{op: op.n, slot: metaSlot, prev: noPrev}.encode(op.pad)
}

// apply runs op against e and reports whether every part of it succeeded
// with an outcome the stream allows; only then may the child acknowledge.
func (op crashOp) apply(ctx context.Context, e engine.Engine) error {
	switch op.kind {
	case kindUpdate:
		batch := make([]engine.Update, len(op.updates))
		for i, u := range op.updates {
			batch[i] = engine.Update{Key: u.key, Fn: u.fn(op.n, i)}
		}
		errs, err := e.Update(ctx, batch)
		if err != nil {
			return fmt.Errorf("op %d: update: %w", op.n, err)
		}
		if len(errs) != len(batch) {
			return fmt.Errorf("op %d: %d errors for %d updates", op.n, len(errs), len(batch))
		}
		for i, err := range errs {
			if err != nil && !errors.Is(err, errCrashRefused) {
				return fmt.Errorf("op %d: update %d: %w", op.n, i, err)
			}
		}
		return nil
	case kindCreate:
		err := e.CreateOnly(ctx, op.updates[0].key, op.createValue(), op.ttl)
		if err != nil && !errors.Is(err, engine.ErrExists) {
			return fmt.Errorf("op %d: create: %w", op.n, err)
		}
		return nil
	case kindDelete:
		if err := e.Delete(ctx, op.keys); err != nil {
			return fmt.Errorf("op %d: delete: %w", op.n, err)
		}
		return nil
	default:
		if err := e.PutMeta(ctx, crashMetaName, op.metaValue()); err != nil {
			return fmt.Errorf("op %d: put meta: %w", op.n, err)
		}
		return nil
	}
}

// predict applies op to a model of the store, one value per key (the
// metadata entry under crashMetaKey), and returns the keys it touched.
// It mirrors the engine contract, as the memory engine does.
func (op crashOp) predict(model map[engine.Key][]byte) []engine.Key {
	switch op.kind {
	case kindUpdate:
		touched := make([]engine.Key, len(op.updates))
		for i, u := range op.updates {
			touched[i] = u.key
			m, err := u.fn(op.n, i)(model[u.key])
			if err != nil {
				continue
			}
			switch m.Action {
			case engine.Put:
				model[u.key] = m.Value
			case engine.Remove:
				delete(model, u.key)
			}
		}
		return touched
	case kindCreate:
		k := op.updates[0].key
		if model[k] == nil {
			model[k] = op.createValue()
		}
		return []engine.Key{k}
	case kindDelete:
		for _, k := range op.keys {
			delete(model, k)
		}
		return op.keys
	default:
		model[crashMetaKey] = op.metaValue()
		return []engine.Key{crashMetaKey}
	}
}
