package blockpath

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/testlog"
)

var long = flag.Bool("long", false, "run the crash tests on every engine and sync mode")

// crashChildEnv makes the test binary the child of TestKillBetweenSteps:
// "ENGINE SYNC BULK DIR [OP/STEP/HEIGHT/OCCURRENCE]", BULK the path's
// IndexBulk.
const crashChildEnv = "UTXOSTORE_BLOCKPATH_CRASH_CHILD"

// crashPoints are the steps the child is killed after: a connection of
// branch A's block 104, the disconnection of A's block 105 in the
// reorganisation to branch B, and the connection of B's block 105 in it
// (the second block connected at that height).
var crashPoints = []string{
	"connect/checked/104/1", "connect/kept/104/1", "connect/stored/104/1", "connect/indexed/104/1",
	"disconnect/unindexed/105/1", "disconnect/unstored/105/1", "disconnect/dropped/105/1",
	"connect/kept/105/2", "connect/stored/105/2", "connect/indexed/105/2",
}

// TestKillBetweenSteps kills a child process with SIGKILL right after each
// step of the path, for connections and for disconnections, while it
// follows branch A and then reorganises to branch B; a second child
// resumes in the same directory. The directory must then hold what an
// uninterrupted run leaves: the store's digest, the index's balances and
// tip, and every one of B's blocks in the block store. Sozu under both
// sync modes, and with the index written in bulk (an import's mode, whose
// bulk import disconnects blocks itself) by default; with -long Pebble too.
func TestKillBetweenSteps(t *testing.T) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		runCrashChild(t, spec)
		return
	}
	c := newTestChains(t)
	type setup struct {
		engine string
		sync   engine.SyncMode
		bulk   int // IndexBulk
	}
	setups := []setup{{"sozu", engine.SyncAlways, 0}, {"sozu", engine.SyncBlock, 0}, {"sozu", engine.SyncAlways, 4}}
	if *long {
		setups = append(setups, setup{"pebble", engine.SyncAlways, 0}, setup{"pebble", engine.SyncBlock, 0}, setup{"sozu", engine.SyncBlock, 4})
	}
	for _, s := range setups {
		t.Run(fmt.Sprintf("%s/%s/bulk-%d", s.engine, s.sync, s.bulk), func(t *testing.T) {
			ref := filepath.Join(t.TempDir(), "reference")
			runChild(t, s.engine, s.sync, s.bulk, ref, "", false)
			want := describe(t, ref, s.engine, s.sync, c)
			for _, point := range crashPoints {
				dir := filepath.Join(t.TempDir(), strings.ReplaceAll(point, "/", "-"))
				runChild(t, s.engine, s.sync, s.bulk, dir, point, true)
				runChild(t, s.engine, s.sync, s.bulk, dir, "", false)
				if got := describe(t, dir, s.engine, s.sync, c); got != want {
					t.Fatalf("killed after %s and resumed:\n%s\nwant, as an uninterrupted run leaves it:\n%s", point, got, want)
				}
			}
		})
	}
}

// runChild runs the child over dir, killed after point when it is set;
// killed says whether it must die by SIGKILL there.
func runChild(t *testing.T, engineName string, sync engine.SyncMode, bulk int, dir, point string, killed bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillBetweenSteps$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %s %s", crashChildEnv, engineName, sync, bulk, dir, point))
	out, err := cmd.CombinedOutput()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case killed && !ws.Signaled():
		t.Fatalf("the child was not killed after %s (%v):\n%s", point, err, out)
	case !killed && err != nil:
		t.Fatalf("the child resuming in %s: %v\n%s", dir, err, out)
	}
}

// runCrashChild follows branch A, then B (once A is done, a file says so),
// and kills itself after the step spec names.
func runCrashChild(t *testing.T, spec string) {
	fields := strings.Fields(spec)
	engineName, dir := fields[0], fields[3]
	sync, err := engine.ParseSyncMode(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	bulk, err := strconv.Atoi(fields[2])
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) == 5 {
		seen := map[string]int{}
		stepHook = func(op, step string, height uint32) {
			at := fmt.Sprintf("%s/%s/%d", op, step, height)
			seen[at]++
			if fmt.Sprintf("%s/%d", at, seen[at]) == fields[4] {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
		defer func() { stepHook = nil }()
	}
	c := newTestChains(t)
	known := byHash(c.A, c.B)
	s := openDir(t, dir, engineName, sync, true, true)
	defer s.close(t)
	p, err := Open(context.Background(), Config{Store: s.store, Rules: rules, Blocks: s.blocks, Index: s.index, IndexBulk: bulk, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	doneA := filepath.Join(dir, "followed-A")
	if _, err := os.Stat(doneA); err != nil {
		if err := follow(ctx, p, c.A, known); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(doneA, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := follow(ctx, p, c.B, known); err != nil {
		t.Fatal(err)
	}
}

// describe opens dir's stores and says what they hold: the stores' tips,
// the store's summary, the index's balances of the chains' scripts and
// which of B's blocks the block store holds.
func describe(t *testing.T, dir, engineName string, sync engine.SyncMode, c *testChains) string {
	t.Helper()
	s := openDir(t, dir, engineName, sync, true, true)
	defer s.close(t)
	p := s.path(t)
	ctx := context.Background()
	var b strings.Builder
	l, err := p.Levels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "store %d %s, index %d %s, blocks %d %s\n", l.Store.Tip.Height, l.Store.Tip.Hash, l.Index.Tip.Height, l.Index.Tip.Hash, l.Blocks.Tip.Height, l.Blocks.Tip.Hash)
	sum, err := s.store.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "summary %+v\n", sum)
	for _, tag := range []byte{0, 1, 2, 3, 4, 5, 6, 20, 30, 40} {
		bal, err := s.index.Balance(index.AddrDesc(script(tag)))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "key %d: balance %d sent %d txs %d\n", tag, bal.Balance, bal.Sent, bal.Txs)
	}
	for h, blk := range c.B {
		if kept, ok, err := p.Kept(ctx, uint32(h)); err != nil || !ok || kept.Hash != blk.Hash {
			fmt.Fprintf(&b, "the block store lacks B's block %d (%v)\n", h, err)
		}
	}
	return b.String()
}
