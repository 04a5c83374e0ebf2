package sozu

import (
	"fmt"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// shard owns one hash segment of the table. Its goroutine is the only one
// that touches its table and log: a request is a closure run there, and
// the goroutine drains every request waiting in its inbox, runs them,
// then writes their log records with one write and, under SyncAlways, one
// fsync before answering any of them (group commit).
type shard struct {
	id     int
	dir    string
	opts   Options
	table  *table
	log    *writeAheadLog
	inbox  chan *request
	failed error // the first write failure; the shard then refuses work
}

type request struct {
	run  func(s *shard) error
	err  error
	done chan struct{}
	// lazy marks a request whose log records need not be durable before
	// it is answered (SetHeight: losing it only delays the purge). A group
	// of lazy requests is written without an fsync; the next durable
	// commit or Checkpoint covers it, and the log keeps its order.
	lazy bool
}

// maxGroup bounds how many requests share one commit, so a flood of
// callers cannot delay the first one's answer without limit.
const maxGroup = 512

func (s *shard) loop() {
	batch := make([]*request, 0, maxGroup)
	for r := range s.inbox {
		batch = append(batch[:0], r)
	drain:
		for len(batch) < maxGroup {
			select {
			case more, ok := <-s.inbox:
				if !ok {
					break drain
				}
				batch = append(batch, more)
			default:
				break drain
			}
		}
		lazy := true
		for _, r := range batch {
			lazy = lazy && r.lazy
			if s.failed != nil {
				r.err = s.failed
				continue
			}
			r.err = r.run(s)
		}
		err := s.commitAs(!lazy && s.opts.Sync == engine.SyncAlways)
		for _, r := range batch {
			if r.err == nil {
				r.err = err
			}
			close(r.done)
		}
	}
}

// do runs fn on the shard goroutine and waits for its commit.
func (s *shard) do(fn func(s *shard) error) error {
	r := &request{run: fn, done: make(chan struct{})}
	s.inbox <- r
	<-r.done
	return r.err
}

// start sends fn without waiting; wait on the returned request.
func (s *shard) start(fn func(s *shard) error) *request {
	r := &request{run: fn, done: make(chan struct{})}
	s.inbox <- r
	return r
}

func (r *request) wait() error {
	<-r.done
	return r.err
}

// commit makes the batch's log records durable as the sync mode asks, then
// writes dirty deep buckets out if they exceed their memory budget.
func (s *shard) commit() error { return s.commitAs(s.opts.Sync == engine.SyncAlways) }

// commitAs is commit with the fsync decided by the caller.
func (s *shard) commitAs(sync bool) error {
	if s.failed != nil {
		return s.failed
	}
	if err := s.log.flush(sync); err != nil {
		s.failed = err
		return err
	}
	s.table.dropClean()
	if s.table.dirtyBytes() > s.opts.DirtyBytes/s.opts.Shards {
		if err := s.table.flush(); err != nil {
			s.failed = err
			return err
		}
	}
	return nil
}

func (s *shard) update(updates []engine.Update, positions []int, errs []error) error {
	for _, i := range positions {
		u := &updates[i]
		loc, found, err := s.table.lookup(&u.Key)
		if err != nil {
			return err
		}
		var current []byte
		if found && loc.b.entries[loc.pos].live(s.table.now()) {
			if current, err = s.table.valueOf(&loc.b.entries[loc.pos]); err != nil {
				return err
			}
		}
		m, ferr := u.Fn(current)
		if ferr != nil {
			errs[i] = ferr
			continue
		}
		switch m.Action {
		case engine.Put:
			e := entry{key: u.Key, terms: m.Terms}
			s.log.logPut(&e, m.Value)
			if err := s.table.put(loc, found, e, m.Value); err != nil {
				return s.fail(err)
			}
		case engine.Remove:
			if found {
				s.log.logRemove(u.Key)
				s.table.remove(loc)
			}
		case engine.Keep:
		default:
			errs[i] = fmt.Errorf("sozu: unknown action %d", m.Action)
		}
	}
	return nil
}

func (s *shard) createOnly(k engine.Key, value []byte, ttl time.Duration) error {
	loc, found, err := s.table.lookup(&k)
	if err != nil {
		return err
	}
	now := s.table.now()
	if found && loc.b.entries[loc.pos].live(now) {
		return engine.ErrExists
	}
	e := entry{key: k}
	if ttl > 0 {
		e.expiresAt = now + int64(ttl)
	}
	s.log.logPut(&e, value)
	if err := s.table.put(loc, found, e, value); err != nil {
		return s.fail(err)
	}
	return nil
}

func (s *shard) delete(keys []engine.Key, positions []int) error {
	for _, i := range positions {
		loc, found, err := s.table.lookup(&keys[i])
		if err != nil {
			return err
		}
		if found {
			s.log.logRemove(keys[i])
			s.table.remove(loc)
		}
	}
	return nil
}

// fail records a write failure: the in-memory table may now be ahead of
// the log, so the shard stops taking work until it is reopened.
func (s *shard) fail(err error) error {
	s.failed = err
	return err
}
