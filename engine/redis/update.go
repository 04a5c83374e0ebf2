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
	key  engine.Key
	idx  []int     // positions in the batch
	sent *casWrite // the write whose reply was lost, if any
}

// Update implements engine.Engine as optimistic check-and-set:
//
//  1. read every key of the batch: one pipelined GET per master;
//  2. run each key's functions in Go, in batch order, each on the result of
//     the one before;
//  3. send the changed keys' CAS scripts: one pipeline per master (ending
//     with WAIT under SyncAlways with Wait > 0, unless the sync is
//     deferred);
//  4. keys whose stamp changed since step 1 (a concurrent writer) go round
//     again from step 1, re-running their functions on the new value.
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
	r := e.newRetrier()
	for len(pending) > 0 {
		keys := make([]engine.Key, len(pending))
		for i, g := range pending {
			keys[i] = g.key
		}
		cur, err := e.readStored(ctx, keys)
		if err != nil {
			return errs, err
		}
		var writes []*casWrite
		var owners []*group
		for i, g := range pending {
			if g.sent != nil {
				applied, err := settle(g.sent, cur[i])
				if err != nil {
					return errs, err
				}
				g.sent = nil
				if applied {
					continue // errs hold the results of the run that wrote
				}
			}
			if w := apply(updates, g, cur[i], errs); w != nil {
				writes = append(writes, w)
				owners = append(owners, g)
			}
		}
		if len(writes) == 0 {
			break
		}
		var nodeTrouble error
		pending, nodeTrouble, err = e.sendCAS(ctx, writes, owners, wait)
		if err != nil {
			return errs, err
		}
		switch {
		case len(pending) == 0:
		case nodeTrouble != nil:
			err = r.wait(ctx, nodeTrouble)
		default:
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
		w.stamp, w.value, w.terms = newStamp(), value, terms
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

// sendCAS sends the writes, one pipeline per master, and returns the groups
// to run again: those that met a concurrent writer, were refused by a node
// (redirect, failover), or lost their reply (marked with sent). trouble is
// one of the node errors seen, nil when there were only conflicts.
func (e *Engine) sendCAS(ctx context.Context, writes []*casWrite, owners []*group, wait bool) (again []*group, trouble, err error) {
	rk := make([]string, len(writes))
	for i, w := range writes {
		rk[i] = e.lay.record(w.key)
	}
	cmds, errs, _ := e.fanOut(ctx, rk, func(p redis.Pipeliner, i int) redis.Cmder { return e.addCAS(ctx, p, writes[i]) }, wait)
	noScript := false
	for i, c := range cmds {
		switch classify(errs[i]) {
		case done:
			if ok, _ := c.(*redis.Cmd).Int(); ok != 1 {
				again = append(again, owners[i])
			}
		case notRun:
			noScript = noScript || isNoScript(errs[i])
			again, trouble = append(again, owners[i]), errs[i]
		case uncertain:
			owners[i].sent = writes[i]
			again, trouble = append(again, owners[i]), errs[i]
		default:
			return nil, nil, e.check(errs[i])
		}
	}
	if noScript {
		_ = e.loadScript(ctx) // a failure shows as NOSCRIPT again
	}
	return again, trouble, nil
}
