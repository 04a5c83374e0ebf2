package sozu

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// shard owns one hash segment of the table. A request is a closure run by
// the shard's goroutine or, when the shard is idle, by its caller (call);
// exec makes one of them at a time touch the table. The goroutine
// drains every request waiting in its inbox, applies the writing ones,
// appends their log records to the shared log with one write and, under
// SyncAlways, makes them durable (one fsync shared with the other shards
// of the batch: writeAheadLog.syncTo) before it runs the reading ones and
// answers any of them. So nothing can read a write that is not yet durable.
// A batch of Engine.Update or Delete is made durable by its caller instead,
// once every shard has appended its part (request.callerSyncs); until then
// the shard's reads wait for that fsync (readable).
type shard struct {
	id      int
	dir     string
	opts    Options
	table   *table
	log     *writeAheadLog // shared by all shards
	records logRecords     // this shard's records not yet in the log
	inbox   chan *request
	failure *storeFailure // the store's first write failure; shared by all shards
	// checkpointBytes counts the checkpoint file bytes written since Open.
	checkpointBytes int64
	// retiredValueLogs are value logs compacted into a newer one, deleted
	// once a checkpoint naming the newer one is current.
	retiredValueLogs []string
	// owed is where the log ends after the records of callerSyncs requests
	// this shard appended last, 0 when they are known durable: a read
	// waits until they are (readable).
	owed int64
	// exec is held while a group of requests runs: by the goroutine, or by
	// a caller that found the shard idle and runs its request itself
	// (call). Only its holder touches the table.
	exec sync.Mutex
}

type request struct {
	run  func(s *shard) error
	err  error
	done chan struct{}
	// lazy marks a request whose log records need not be durable before
	// it is answered (SetHeight: losing it only delays the purge; a write
	// whose context defers its sync, engine.DeferSync). A group
	// of lazy requests is written without an fsync; the next durable
	// commit or Checkpoint covers it, and the log keeps its order.
	lazy bool
	// reads marks a request that logs nothing (Get, Scan, ForEach, Stats):
	// it runs after the group's writes are durable, and a long one does
	// not hold up the other shards' fsync.
	reads bool
	// callerSyncs marks a durable write whose caller makes the log durable
	// once every shard of its batch has appended its records
	// (Engine.fanOut): the shard appends them without an fsync of its own
	// and answers with end, where they stop in the log.
	callerSyncs bool
	end         int64
}

// maxGroup bounds how many requests share one commit, so a flood of
// callers cannot delay the first one's answer without limit.
const maxGroup = 512

func (s *shard) loop() {
	batch := make([]*request, 0, maxGroup)
	for r := range s.inbox {
		s.exec.Lock()
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
		s.execute(batch)
		s.exec.Unlock()
	}
}

// execute runs a group of requests and answers them; the caller holds
// exec.
func (s *shard) execute(batch []*request) {
	err := s.write(batch)
	readErr := s.readable(batch)
	for _, r := range batch {
		if r.reads {
			r.err = readErr
			if r.err == nil {
				r.err = s.runRequest(r)
			}
		} else if r.err == nil {
			r.err = err
		}
		if r.done != nil {
			close(r.done)
		}
	}
	s.table.dropClean()
}

// readable makes the records of callerSyncs requests this shard appended
// durable before the batch's reads run, if it has any: their callers'
// fsync may not have run yet, and nothing reads a write that is not
// durable. Once it has, this costs nothing.
func (s *shard) readable(batch []*request) error {
	if s.owed == 0 || !slices.ContainsFunc(batch, func(r *request) bool { return r.reads }) {
		return nil
	}
	if err := s.log.syncTo(s.owed); err != nil {
		return s.fail(err)
	}
	s.owed = 0
	return nil
}

// call runs fn as a reading or writing request (lazy: see request.lazy)
// and returns its answer. A
// caller that finds the shard idle (nothing queued, no group running)
// runs the request itself: a single small call then costs no hand-off to
// the goroutine and back, whose two thread wake-ups were most of its time.
// Otherwise fn is queued, and the goroutine groups it with the others.
func (s *shard) call(fn func(s *shard) error, reads, lazy bool) error {
	return s.callRequest(&request{run: fn, reads: reads, lazy: lazy})
}

// callRequest is call for a request built by its caller, which reads the
// request's end once it is answered.
func (s *shard) callRequest(r *request) error {
	if len(s.inbox) == 0 && s.exec.TryLock() {
		s.execute([]*request{r})
		s.exec.Unlock()
		return r.err
	}
	r.done = make(chan struct{})
	s.inbox <- r
	return r.wait()
}

// write applies the group's writing requests, appends their records and
// makes them as durable as the sync mode asks; it returns the commit's
// error (each request's own error is in it).
func (s *shard) write(batch []*request) error {
	// syncs: some write must be durable before the shard answers it.
	syncs, writes := false, false
	for _, r := range batch {
		if !r.reads {
			syncs, writes = syncs || !r.lazy && !r.callerSyncs, true
		}
	}
	if !writes {
		return nil
	}
	// A page checkpoint's last request switches s.log: the group ends on
	// the log it started on.
	log := s.log
	log.startGroup()
	for _, r := range batch {
		if !r.reads {
			r.err = s.runRequest(r)
		}
	}
	end, err := s.appendRecords()
	log.endGroup()
	if err != nil {
		return err
	}
	for _, r := range batch {
		if r.callerSyncs {
			r.end, s.owed = end, end
		}
	}
	if !syncs || s.opts.Sync != engine.SyncAlways {
		return s.flushDirty()
	}
	// The table's upkeep needs nothing from the log: it runs while the
	// log syncs, on a goroutine that owns the table until it answers. Its
	// page writes go to pages no checkpoint references (pagestore.go), so
	// a crash before the sync leaves them unread.
	settled := make(chan error, 1)
	go func() { settled <- s.table.settle() }()
	err = s.log.syncTo(end)
	if settleErr := <-settled; err == nil {
		err = settleErr
	}
	if err != nil {
		return s.fail(err)
	}
	s.owed = 0
	return nil
}

func (s *shard) runRequest(r *request) error {
	if err := s.failure.err(); err != nil {
		return err
	}
	return r.run(s)
}

// do runs fn as a writing request and waits for its commit.
func (s *shard) do(fn func(s *shard) error) error {
	return s.call(fn, false, false)
}

// read runs fn as a reading request and waits.
func (s *shard) read(fn func(s *shard) error) error {
	return s.call(fn, true, false)
}

// start sends fn as a writing request without waiting; wait on the
// returned request.
func (s *shard) start(fn func(s *shard) error) *request {
	return s.send(fn, false, false)
}

// send queues fn as a reading or writing request.
func (s *shard) send(fn func(s *shard) error, reads, lazy bool) *request {
	return s.sendRequest(&request{run: fn, reads: reads, lazy: lazy})
}

// sendRequest queues r, built by its caller.
func (s *shard) sendRequest(r *request) *request {
	r.done = make(chan struct{})
	s.inbox <- r
	return r
}

func (r *request) wait() error {
	<-r.done
	return r.err
}

// appendRecords writes the shard's buffered records to the shared log (no
// fsync) and returns the log size that covers them.
func (s *shard) appendRecords() (int64, error) {
	if err := s.failure.err(); err != nil {
		return 0, err
	}
	end, err := s.log.append(&s.records)
	if err != nil {
		return 0, s.fail(err)
	}
	return end, nil
}

// flushDirty keeps buffered changes and dirty deep buckets within their
// memory budgets.
func (s *shard) flushDirty() error {
	if err := s.table.settle(); err != nil {
		return s.fail(err)
	}
	return nil
}

func (s *shard) update(updates []engine.Update, positions []int, errs []error) error {
	now := s.table.now() // one clock read per batch: only lock records expire
	for _, i := range positions {
		u := &updates[i]
		loc, found, err := s.table.lookup(&u.Key)
		if err != nil {
			return err
		}
		var current, base []byte
		if found && loc.b.entries[loc.pos].live(now) {
			if current, err = s.table.lendValue(&loc.b.entries[loc.pos]); err != nil {
				return err
			}
			if loc.b.entries[loc.pos].lastsUntilRemoved() {
				base = current
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
			// Logged before the table changes: the lent value and m.Value,
			// which may share its memory, are valid until then.
			s.records.logUpdate(&e, base, m.Value)
			if err := s.table.put(loc, found, e, m.Value); err != nil {
				return s.fail(err)
			}
		case engine.Remove:
			if found {
				s.records.logRemove(u.Key)
				if err := s.table.remove(loc); err != nil {
					return s.fail(err)
				}
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
	s.records.logPut(&e, value)
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
			s.records.logRemove(keys[i])
			if err := s.table.remove(loc); err != nil {
				return s.fail(err)
			}
		}
	}
	return nil
}

// fail records a write failure: the shard's in-memory table may now be
// ahead of the log, so the store stops taking work until it is reopened.
func (s *shard) fail(err error) error {
	s.failure.record(err)
	return err
}

// storeFailure holds the first write failure of any shard. From then on
// every shard refuses every request, reads included, with a
// *StoppedError: the store answers as one, so that a health check (a
// read of the metadata, which one shard holds) sees what the other
// shards' callers see.
type storeFailure struct {
	first atomic.Pointer[StoppedError]
}

func (f *storeFailure) record(err error) { f.first.CompareAndSwap(nil, &StoppedError{Cause: err}) }

// err is the store's refusal once a write failed, nil before.
func (f *storeFailure) err() error {
	if stopped := f.first.Load(); stopped != nil {
		return stopped
	}
	return nil
}

// StoppedError is what every call returns once a write of the store
// failed (a full disk, an I/O error): the memory of the shard that failed
// may be ahead of its log, so the store refuses work until it is
// reopened, which recovers it as after a crash. It unwraps to the failure.
type StoppedError struct {
	Cause error
}

func (e *StoppedError) Error() string {
	return "sozu: the store stopped at a failed write; fix the cause (free disk space, say) and reopen it: " + e.Cause.Error()
}

func (e *StoppedError) Unwrap() error { return e.Cause }
