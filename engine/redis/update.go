package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
)

// group is every update of one key in a batch, in batch order.
type group struct {
	key engine.Key
	idx []int // positions in the batch
	// cur is the record the group's functions run on next: read by this
	// Update (read), or else assumed, from what the engine last saw of it
	// (recent) or, for a record it never saw, absent. nil: to be read.
	cur  *stored
	read bool
	sent *casWrite // the write whose reply was lost, if any
}

// Update implements engine.Engine as optimistic check-and-set, in rounds
// of one pipeline per master:
//
//  1. each key's functions run in Go, in batch order, each on the result
//     of the one before, starting from the record as last read, or as
//     this engine last read or wrote it (recent), or as absent when it
//     never saw it;
//  2. a key whose functions change the record sends its CAS script with
//     the stamp they started from; a key whose functions change nothing
//     is done if this Update read its record, and is read otherwise,
//     since only a write checks what it assumed;
//  3. a CAS that finds another stamp (a concurrent writer, or an
//     assumption that was stale) returns the record as it is, and its key
//     goes round again from step 1 on it.
//
// So a batch whose records this engine's Updates wrote or read last, or
// that creates records, is one round trip per master; any other is two,
// and more under contention.
// Pipelines holding a write end with WAIT under SyncAlways with Wait > 0,
// unless the sync is deferred.
//
// A CAS whose reply is lost with its connection (a master dying) is settled
// on the next read: its own stamp there means it ran; the stamp it
// expected means it did not and it is sent again; anything else means it
// cannot be known, and Update fails rather than guess.
func (e *Engine) Update(ctx context.Context, updates []engine.Update) ([]error, error) {
	if err := e.writable(); err != nil {
		return nil, err
	}
	wait, err := e.syncWrites(ctx)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(updates))
	pending := groupByKey(updates)
	for _, g := range pending {
		s, _ := e.recent.get(g.key) // absent when unknown
		g.cur = &s
	}
	r := e.newRetrier()
	for len(pending) > 0 {
		var round []*group
		var writes []*casWrite // per member of round; nil for a read
		for _, g := range pending {
			var w *casWrite
			if g.cur != nil {
				if w = apply(updates, g, *g.cur, errs); w == nil && g.read {
					continue // nothing to write, on the record as read: done
				}
			}
			round, writes = append(round, g), append(writes, w)
		}
		if len(round) == 0 {
			break
		}
		var trouble error
		var contended bool
		pending, trouble, contended, err = e.sendRound(ctx, round, writes, wait)
		if err != nil {
			return errs, err
		}
		switch {
		case len(pending) == 0:
		case trouble != nil:
			err = r.wait(ctx, trouble)
		case contended:
			err = r.conflict(ctx, errConflicts)
		}
		if err != nil {
			return errs, err
		}
	}
	return errs, nil
}

var errConflicts = errors.New("redis: concurrent writers kept changing the records")

func groupByKey(updates []engine.Update) []*group {
	byKey := make(map[engine.Key]*group, len(updates))
	var groups []*group
	for i, u := range updates {
		g := byKey[u.Key]
		if g == nil {
			g = &group{key: u.Key}
			byKey[u.Key] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	return groups
}

// apply runs g's functions in order on the current record and returns the
// write that makes their combined effect, or nil when there is nothing to
// write (every function kept or failed, or the record ends as absent as it
// began). Each function's error goes to errs.
func apply(updates []engine.Update, g *group, cur stored, errs []error) *casWrite {
	value, present, changed := cur.value, cur.present, false
	var terms engine.Terms
	for _, i := range g.idx {
		var in []byte
		if present {
			in = value
		}
		m, err := updates[i].Fn(in)
		errs[i] = err
		if err != nil {
			continue
		}
		switch m.Action {
		case engine.Put:
			value, present, terms, changed = m.Value, true, m.Terms, true
		case engine.Remove:
			value, present, changed = nil, false, true
		}
	}
	if !changed || (!present && !cur.present) {
		return nil
	}
	w := &casWrite{key: g.key, expect: cur.expect(), remove: !present}
	if present {
		w.stamp, w.terms = newStamp(), terms
		w.encoded = encode(w.stamp, value)
	}
	return w
}

// settle decides whether a CAS whose reply was lost ran, from the record
// read afterwards.
func settle(w *casWrite, now stored) (applied bool, err error) {
	switch {
	case !w.remove && now.present && now.stamp == w.stamp:
		return true, nil
	case w.remove && !now.present:
		// Ours or another writer's delete: either way the record is gone,
		// as ours wanted.
		return true, nil
	case now.expect() == w.expect:
		return false, nil
	}
	return false, fmt.Errorf("redis: the reply to a write of key %x was lost and the record has changed since: whether the write ran cannot be known", w.key)
}

// sendRound sends one round of Update: for each group its write, or a
// read of its record where writes[i] is nil, one pipeline per master. It
// returns the groups to run again: those read now, those whose CAS met
// another stamp (its reply is the record as it is), were refused by a node
// (redirect, failover) or lost their reply (marked with sent, to be read). trouble is one of
// the node errors seen; contended reports a CAS that lost to a concurrent
// writer on a record read just before, which calls for a pause.
func (e *Engine) sendRound(ctx context.Context, round []*group, writes []*casWrite, wait bool) (again []*group, trouble error, contended bool, err error) {
	rk := make([]string, len(round))
	for i, g := range round {
		rk[i] = e.lay.record(g.key)
	}
	cmds, errs, _ := e.fanOutWaitFor(ctx, rk, func(p redis.Pipeliner, i int) redis.Cmder {
		if writes[i] == nil {
			return p.Get(ctx, rk[i])
		}
		return e.addCAS(ctx, p, writes[i])
	}, func(i int) bool { return wait && writes[i] != nil })
	noScript := false
	for i, c := range cmds {
		g, w := round[i], writes[i]
		switch classify(errs[i]) {
		case done:
			if w == nil {
				settled, err := e.readInto(g, rk[i], c.(*redis.StringCmd))
				if err != nil {
					return nil, nil, false, err
				}
				if !settled {
					again = append(again, g)
				}
				continue
			}
			reply, _ := c.(*redis.Cmd).Result() // nil when the record is absent
			if ok, _ := reply.(int64); ok == 1 {
				e.wrote(w)
				continue
			}
			// Another stamp: the reply is the record as it is now.
			contended = contended || g.read
			var now stored
			if raw, isString := reply.(string); isString {
				if now, err = decode(rk[i], raw); err != nil {
					return nil, nil, false, err
				}
			}
			g.cur, g.read = &now, true
			e.recent.put(g.key, now)
			again = append(again, g)
		case notRun:
			noScript = noScript || isNoScript(errs[i])
			again, trouble = append(again, g), errs[i]
		case uncertain:
			if w != nil {
				g.sent = w
			}
			g.cur, g.read = nil, false
			e.recent.forget(g.key)
			again, trouble = append(again, g), errs[i]
		default:
			return nil, nil, false, e.check(errs[i])
		}
	}
	if noScript {
		_ = e.loadScript(ctx) // a failure shows as NOSCRIPT again
	}
	return again, trouble, contended, nil
}

// readInto takes the record read for g: it settles g's write whose reply
// was lost, if any (settled: that write ran, and errs hold the results of
// the run that made it), and is what g's functions run on next.
func (e *Engine) readInto(g *group, redisKey string, c *redis.StringCmd) (settled bool, err error) {
	raw, err := c.Result()
	var now stored
	if !errors.Is(err, redis.Nil) {
		if now, err = decode(redisKey, raw); err != nil {
			return false, err
		}
	}
	if w := g.sent; w != nil {
		applied, err := settle(w, now)
		if err != nil {
			return false, err
		}
		g.sent = nil
		if applied {
			e.wrote(w)
			return true, nil
		}
	}
	g.cur, g.read = &now, true
	e.recent.put(g.key, now)
	return false, nil
}

// wrote records a write that ran as the record's latest known state.
func (e *Engine) wrote(w *casWrite) {
	if w.remove {
		e.recent.forget(w.key)
		return
	}
	e.recent.put(w.key, stored{present: true, stamp: w.stamp, value: w.encoded[stampSize:]})
}
