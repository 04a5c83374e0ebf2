package enginetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/setting"
)

// CrashHarness tells Crash how to open the engine under test and how hard
// to try.
type CrashHarness struct {
	// Open opens the engine over dir, in the child and, after each kill,
	// in the parent. It must open it with the sync mode named by Sync.
	Open func(t testing.TB, dir string) engine.Engine
	// Sync is the durability the engine promises: with SyncAlways every op
	// acknowledged by the child must survive the kill, with SyncBlock
	// every op up to the last acknowledged Checkpoint.
	Sync engine.SyncMode
	// Deferred makes two ops in three defer their sync (engine.DeferSync,
	// see deferredOp). With SyncAlways such an op must survive the kill
	// only once a later op that does not defer it, or a Checkpoint, was
	// acknowledged: a durable write covers every write before it.
	Deferred bool
	// Kills is the number of kill-and-recover rounds; 0 means 20, or 100
	// when Long is set.
	Kills int
	// Long is the long mode (Flags.Long).
	Long bool
	// Verify, when set, runs on every recovered store after the harness's
	// own checks, for store-level consistency checks.
	Verify func(t testing.TB, e engine.Engine)
	// Seed fixes the operation stream and the kill points; 0 picks one
	// from the clock (it is logged, so a failure can be replayed).
	Seed int64
	// KeySpace is the number of keys the ops touch; 0 means 256, small so
	// that ops keep overwriting each other.
	KeySpace int
	// CheckpointEvery is the number of ops between checkpoints; 0 means 16.
	CheckpointEvery int
	// MaxAcks bounds the acknowledged ops a round may last before its kill,
	// drawn uniformly from [1, MaxAcks]; 0 means 200.
	MaxAcks int
	// RoundTimeout kills a child that has not reached its kill point in
	// time (a slow or stuck engine); 0 means 60 s.
	RoundTimeout time.Duration
	// WriteLimit, when set, makes each child's writes fail as a full disk
	// fails them: once its store is open, no write may reach past a size
	// limit, the size of one of the directory's files (drawn at random, so
	// that each file in turn is the one to fail) plus a slack drawn from
	// [0, WriteLimit) bytes (RLIMIT_FSIZE; a write past the limit fails with
	// EFBIG, a write across it is cut short). The first op or
	// Checkpoint that fails must fail with an error that wraps EFBIG; the
	// child then closes the engine and is killed, and the parent checks
	// the store as after any kill. Linux only: elsewhere the test skips.
	WriteLimit int64
}

func (h CrashHarness) withDefaults() CrashHarness {
	kills := 20
	if h.Long {
		kills = 100
	}
	setting.Default(&h.Kills, kills)
	if h.Seed == 0 { // any other seed, a negative one too, is a run to reproduce
		h.Seed = time.Now().UnixNano()
	}
	setting.Default(&h.KeySpace, 256)
	setting.Default(&h.CheckpointEvery, 16)
	setting.Default(&h.MaxAcks, 200)
	setting.Default(&h.RoundTimeout, 60*time.Second)
	return h
}

// Crash kills a writer of the engine with SIGKILL again and again and
// checks after each kill that the reopened store kept every acknowledged
// write, holds no torn or misplaced value, and that its indexes agree with
// its records. Call it from the engine's own test:
//
//	func TestCrash(t *testing.T) {
//		enginetest.Crash(t, enginetest.CrashHarness{Open: open, Sync: engine.SyncAlways})
//	}
//
// The writer is this same test binary, re-executed to run only the calling
// test; in it, Crash plays the child: it applies a seeded operation stream
// and acknowledges each op on a pipe once the engine returned. The parent
// kills it after a random number of acknowledgements, reopens the store
// in-process, verifies it against the stream, and starts a new child that
// continues the stream after the last op the killed one could have begun.
//
// With WriteLimit set, the same rounds run on a full disk: the child's
// writes start failing partway, and the round ends at the first failed op
// or Checkpoint (the child closes the engine, then is killed) or when the
// engine ends the process itself. The check is the same: nothing
// acknowledged lost, nothing torn, the store opens.
func Crash(t *testing.T, h CrashHarness) {
	t.Helper()
	if orders := os.Getenv(crashEnv); orders != "" {
		o, err := parseCrashOrders(orders)
		if err != nil {
			t.Fatal(err)
		}
		if o.Test != t.Name() {
			t.Skipf("crash child for %s, not this test", o.Test)
		}
		runCrashChild(t, h, o)
		return
	}
	if h.WriteLimit > 0 && !canLimitFileSize {
		t.Skip("limiting a process's file size (RLIMIT_FSIZE) is supported on Linux only")
	}
	h = h.withDefaults()
	t.Logf("crash test of %v durability: seed %d, %d kills", h.Sync, h.Seed, h.Kills)

	ctx := context.Background()
	dir := t.TempDir()
	keys := crashKeys(h.KeySpace)
	all := append(keys[:len(keys):len(keys)], crashMetaKey)
	rng := rand.New(rand.NewPCG(uint64(h.Seed), 0x6b696c6c)) // "kill"

	var (
		state            = map[engine.Key][]byte{} // the store as last verified
		next             = uint64(1)               // the next op to apply
		acked, applied   uint64
		lost, inFlight   int
		timeouts, rounds int
		writeFailures    int
	)
	for round := 1; round <= h.Kills; round++ {
		target := 1 + rng.IntN(h.MaxAcks)
		orders := crashOrders{
			Test: t.Name(), Dir: dir, Seed: h.Seed, Start: next,
			// Enough that the child is killed long before it runs out.
			Ops:      uint64(target) + 100_000,
			KeySpace: h.KeySpace, CheckpointEvery: uint64(h.CheckpointEvery),
			Deferred: h.Deferred,
		}
		if h.WriteLimit > 0 {
			orders.FileSizeLimit = someFileSize(t, dir, rng) + rng.Int64N(h.WriteLimit)
		}
		res := runCrashRound(t, h, orders, target)
		if res.timedOut {
			timeouts++
		}
		if res.writeFailure != "" {
			writeFailures++
			t.Logf("round %d: %s", round, res.writeFailure)
			if res.timedOut {
				t.Fatalf("round %d: after %s, the engine's Close did not return within %v", round, res.writeFailure, h.RoundTimeout)
			}
		}
		durable := res.lastOp
		if h.Deferred {
			for durable >= next && deferredOp(durable) {
				durable--
			}
			durable = max(durable, res.lastCheckpoint)
		}
		if h.Sync == engine.SyncBlock {
			durable = max(res.lastCheckpoint, next-1)
		}
		hist := predictRound(h.Seed, h.KeySpace, state, next, res.lastOp+1)

		e := h.Open(t, dir)
		observed, problems := observeCrashStore(ctx, e, keys)
		var c crashCheck
		if problems == nil {
			c = judge(observed, state, hist, all, durable, res.lastOp+1)
			problems = c.problems
		}
		if len(problems) > 0 {
			e.Close()
			if len(problems) > 20 {
				problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
			}
			t.Fatalf("round %d (ops %d..%d, last acknowledged %d, durable through %d, seed %d):\n%s",
				round, next, res.lastOp+1, res.lastOp, durable, h.Seed, strings.Join(problems, "\n"))
		}
		if h.Verify != nil {
			h.Verify(t, e)
		}
		// Make the verified state durable whatever the sync mode: it is the
		// next round's starting point.
		if err := e.Checkpoint(ctx, 0); err != nil {
			t.Fatalf("round %d: checkpoint after recovery: %v", round, err)
		}
		if err := e.Close(); err != nil {
			t.Fatalf("round %d: close after recovery: %v", round, err)
		}
		rounds++
		lost += c.lost
		inFlight += c.inFlight
		acked += durable - (next - 1)
		applied += res.lastOp - (next - 1)
		state = observed
		next = res.lastOp + 2 // past the op that may have been in flight
	}
	t.Logf("%d kills survived: %d ops acknowledged as durable (%d returned), %d ops lost, %d keys showed the op in flight at the kill, %d rounds hit the time limit",
		rounds, acked, applied, lost, inFlight, timeouts)
	if h.WriteLimit > 0 {
		t.Logf("%d rounds ended in a failed write", writeFailures)
		if writeFailures == 0 {
			t.Fatalf("no round's writes reached its file size limit, so the test saw no failed write: raise Kills or MaxAcks, or lower WriteLimit")
		}
	}
}

// someFileSize is the size of a file of dir drawn at random, 0 when it
// has none: the base of a round's file size limit, under which that file
// has room to grow by the slack and larger ones fail their writes past
// the limit.
func someFileSize(t *testing.T, dir string, rng *rand.Rand) int64 {
	var sizes []int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sizes = append(sizes, info.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) == 0 {
		return 0
	}
	return sizes[rng.IntN(len(sizes))]
}

// crashRound is what the parent learned from one child.
type crashRound struct {
	lastOp         uint64 // last op acknowledged (start-1 if none)
	lastCheckpoint uint64 // op after which the last acknowledged checkpoint ran (0 if none)
	timedOut       bool
	// writeFailure is the failed op or Checkpoint and its error, when the
	// child's file size limit failed one ("" if none did).
	writeFailure string
}

// runCrashRound starts a child with the orders and SIGKILLs it as soon as
// it has read target acknowledgements (or at the round timeout), then
// drains what the child had written before it died.
func runCrashRound(t *testing.T, h CrashHarness, o crashOrders, target int) crashRound {
	t.Helper()
	orders, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+string(orders))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w} // fd 3 in the child
	if err := cmd.Start(); err != nil {
		w.Close()
		t.Fatal(err)
	}
	w.Close() // only the child writes; its death closes the pipe

	acks := make(chan crashAck, 64)
	go func() {
		defer close(acks)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			acks <- parseCrashAck(sc.Text())
		}
	}()

	res := crashRound{lastOp: o.Start - 1}
	var protocol error
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Kill() // SIGKILL: no chance to flush or close
		}
	}
	timer := time.NewTimer(h.RoundTimeout)
	defer timer.Stop()
	count := 0
	for done := false; !done; {
		select {
		case a, ok := <-acks:
			switch {
			case !ok:
				done = true
			case a.err != nil:
				protocol = a.err
				kill()
			case a.kind == ackCheckpoint:
				if a.n != res.lastOp && protocol == nil {
					protocol = fmt.Errorf("checkpoint acknowledged after op %d while the last op was %d", a.n, res.lastOp)
				}
				res.lastCheckpoint = a.n
			case a.kind == ackFailedOp || a.kind == ackFailedCheckpoint:
				if a.kind == ackFailedOp && a.n != res.lastOp+1 && protocol == nil {
					protocol = fmt.Errorf("op %d failed after op %d", a.n, res.lastOp)
				}
				if a.kind == ackFailedCheckpoint && a.n != res.lastOp && protocol == nil {
					protocol = fmt.Errorf("checkpoint failed after op %d while the last op was %d", a.n, res.lastOp)
				}
				res.writeFailure = a.text
			case a.kind == ackClosed:
				// The child closed its engine after the failed write:
				// now it may die.
				res.writeFailure += "; then " + a.text
				kill()
			default:
				if a.n != res.lastOp+1 && protocol == nil {
					protocol = fmt.Errorf("op %d acknowledged after op %d", a.n, res.lastOp)
				}
				res.lastOp = a.n
				if count++; count == target {
					kill()
				}
			}
		case <-timer.C:
			res.timedOut = true
			kill()
		}
	}
	waitErr := cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	byKill := ws.Signaled() && ws.Signal() == syscall.SIGKILL
	if !byKill && h.WriteLimit > 0 && (res.writeFailure != "" || bytes.Contains(out.Bytes(), []byte(syscall.EFBIG.Error()))) {
		// An engine may end the process when a write fails rather than
		// go on (pebble does, in the failed op or in Close): as good as a
		// kill, if it loses nothing.
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		ended := fmt.Sprintf("the engine ended the process (%v): %s", waitErr, lines[len(lines)-1])
		if res.writeFailure == "" {
			res.writeFailure = fmt.Sprintf("after op %d, %s", res.lastOp, ended)
		} else {
			res.writeFailure += "; then " + ended
		}
	} else if !killed {
		t.Fatalf("crash child exited before it was killed (%v), after op %d:\n%s", waitErr, res.lastOp, out.Bytes())
	} else if !byKill {
		t.Fatalf("crash child ended with %v, not by SIGKILL:\n%s", cmd.ProcessState, out.Bytes())
	}
	if protocol != nil {
		t.Fatalf("crash child: %v\n%s", protocol, out.Bytes())
	}
	return res
}

// runPattern selects exactly the named test (or subtest) with -test.run.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
