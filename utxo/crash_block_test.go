package utxo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/utxo/model"
)

// blockCrashChildEnv makes the test binary the child of
// TestKillMidBlockUnderSyncAlways: "ENGINE DIR BLOCKS HEIGHT WRITES".
const blockCrashChildEnv = "UTXOSTORE_BLOCK_CRASH_CHILD"

// TestKillMidBlockUnderSyncAlways connects real blocks on pebble and on
// sozu under SyncAlways in child processes and kills each with SIGKILL in
// the middle of a block with spends: the child stops after the block's
// first, second, third or fourth write (its deferred ones: creates, spends,
// set-mined, block metadata) and the test kills it there. Each time the reopened
// store's tip must be the last block the child acknowledged (or the one it
// was in, had its chain state been written), with the height of that tip;
// the next child resumes from there. Connected to the end, the store must
// hold what an uninterrupted import on the memory engine holds, digest and
// all.
func TestKillMidBlockUnderSyncAlways(t *testing.T) {
	if spec := os.Getenv(blockCrashChildEnv); spec != "" {
		runBlockCrashChild(t, spec)
		return
	}
	const prefix = 1000
	blocks := chainBlocks(t, btcChain)[:prefix]
	var spending []int
	for h, b := range blocks {
		if len(b.Txs) > 1 {
			spending = append(spending, h)
		}
	}
	if len(spending) < 4 {
		t.Fatalf("only %d blocks with spends in the first %d", len(spending), prefix)
	}
	for _, name := range []string{"pebble", "sozu"} {
		t.Run(name, func(t *testing.T) { killInBlocks(t, name, blocks, spending) })
	}
}

// killInBlocks kills children connecting blocks on engine name in four of
// the spending blocks, then resumes and compares the store with an
// uninterrupted import's.
func killInBlocks(t *testing.T, name string, blocks []Block, spending []int) {
	dir := filepath.Join(t.TempDir(), name)
	for i, writes := range []int{1, 2, 3, 4} {
		height := spending[len(spending)*i/4]
		acked := killChildInBlock(t, name, dir, len(blocks), height, writes)
		db, err := Open(ctx, openCrashEngine(t, name, dir), Options{})
		if err != nil {
			t.Fatalf("reopening after the kill in block %d: %v", height, err)
		}
		tip, ok, err := db.Tip(ctx)
		if err != nil || !ok {
			t.Fatalf("after the kill in block %d: no tip (%v)", height, err)
		}
		if tip.Height != uint32(acked) && tip.Height != uint32(height) || tip.Hash != blocks[tip.Height].Hash {
			t.Fatalf("killed in block %d after %d writes, block %d acknowledged: the tip is %s at height %d", height, writes, acked, tip.Hash, tip.Height)
		}
		if got := db.GetBlockHeight(); got != tip.Height {
			t.Fatalf("killed in block %d: the tip is at height %d, the block height %d", height, tip.Height, got)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}

	db, err := Open(ctx, openCrashEngine(t, name, dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tip, _, err := db.Tip(ctx)
	if err != nil {
		t.Fatal(err)
	}
	connectAll(t, db, blocks[tip.Height+1:])
	reference := newStore(t, Options{})
	connectAll(t, reference, blocks)
	if got, want := summary(t, db), summary(t, reference); got != want {
		t.Fatalf("after the kills and a resume:\n%+v\nwant, as without them,\n%+v", got, want)
	}
	mustVerify(t, db)
}

// killChildInBlock starts a child that connects blocks from the store's
// tip and stops after the given number of writes of the block at height,
// kills it there with SIGKILL, and returns the last block it acknowledged.
func killChildInBlock(t *testing.T, name, dir string, blocks, height, writes int) int {
	t.Helper()
	cmd, stdout := startStoppingChild(t, "TestKillMidBlockUnderSyncAlways", fmt.Sprintf("%s=%s %s %d %d %d", blockCrashChildEnv, name, dir, blocks, height, writes))
	acked, stopped := -1, false
	sc := bufio.NewScanner(stdout)
	for !stopped && sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "connected "); ok {
			var err error
			if acked, err = strconv.Atoi(h); err != nil {
				t.Fatalf("the child printed %q", line)
			}
		}
		stopped = line == "stopped"
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !stopped {
		t.Fatalf("the child ended without stopping in block %d (last acknowledged: %d)", height, acked)
	}
	if acked != height-1 {
		t.Fatalf("the child stopped in block %d after acknowledging block %d", height, acked)
	}
	return acked
}

// runBlockCrashChild is the child: it connects the first BLOCKS blocks of
// the chain from the store's tip, printing each once ConnectBlock returned,
// and in the block at HEIGHT, once WRITES writes of it have returned, says
// so and waits to be killed.
func runBlockCrashChild(t *testing.T, spec string) {
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		t.Fatalf("%s=%q: want ENGINE DIR BLOCKS HEIGHT WRITES", blockCrashChildEnv, spec)
	}
	name, dir := fields[0], fields[1]
	var n [3]int
	for i := range n {
		var err error
		if n[i], err = strconv.Atoi(fields[i+2]); err != nil {
			t.Fatal(err)
		}
	}
	blocks, height, writes := n[0], n[1], n[2]
	stopper := &stopAfterWrites{Engine: openCrashEngine(t, name, dir), left: -1}
	db, err := Open(ctx, stopper, Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := 0
	if tip, ok, err := db.Tip(ctx); err != nil {
		t.Fatal(err)
	} else if ok {
		start = int(tip.Height) + 1
	}
	for _, b := range chainBlocks(t, btcChain)[start:blocks] {
		if int(b.Height) == height {
			stopper.left = writes
		}
		if err := db.ConnectBlock(ctx, b); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("connected %d\n", b.Height)
	}
	t.Fatalf("connected every block without stopping in block %d", height)
}

// stopAfterWrites passes every call to its engine; once left writes have
// returned (left counts down from when it is set; negative: never), it
// prints "stopped" and waits on stdin for the test to kill the process.
// With durable set, it first makes those writes durable, deferred ones
// too, as a power cut may find them: a kill loses a deferred write the
// engine still buffers.
type stopAfterWrites struct {
	engine.Engine
	left    int
	durable bool
}

func (s *stopAfterWrites) wrote() {
	if s.left < 0 {
		return
	}
	if s.left--; s.left == 0 {
		if s.durable {
			// A durable write makes every write before it durable.
			if err := s.Engine.PutMeta(context.Background(), "crash test: durable prefix", nil); err != nil {
				panic(err)
			}
		}
		waitToBeKilled()
	}
}

// startStoppingChild starts the test binary as a child running test alone,
// with env added, and returns it and its stdout. The child's stdin stays
// open until the test ends: a child that stopped waits on it to be killed
// (waitToBeKilled).
func startStoppingChild(t *testing.T, test, env string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdout
}

// killChildAtItsStop starts a child (startStoppingChild) and kills it with
// SIGKILL once it has stopped (waitToBeKilled); it fails if the child ends
// before.
func killChildAtItsStop(t *testing.T, test, env string) {
	t.Helper()
	cmd, stdout := startStoppingChild(t, test, env)
	stopped := false
	for sc := bufio.NewScanner(stdout); !stopped && sc.Scan(); {
		stopped = sc.Text() == "stopped"
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !stopped {
		t.Fatalf("the child %s ended before it stopped", env)
	}
}

// waitToBeKilled says "stopped" on stdout and waits for the test to kill
// the process. Reading stdin blocks in the kernel, so the runtime sees no
// deadlock; the test writes nothing to it.
func waitToBeKilled() {
	fmt.Println("stopped")
	var b [1]byte
	_, err := os.Stdin.Read(b[:])
	panic(fmt.Sprintf("stdin of a child waiting to be killed returned: %v", err))
}

func (s *stopAfterWrites) Update(ctx context.Context, updates []engine.Update) ([]error, error) {
	errs, err := s.Engine.Update(ctx, updates)
	s.wrote()
	return errs, err
}

func (s *stopAfterWrites) CreateOnly(ctx context.Context, key engine.Key, value []byte, ttl time.Duration) error {
	err := s.Engine.CreateOnly(ctx, key, value, ttl)
	s.wrote()
	return err
}

func (s *stopAfterWrites) Delete(ctx context.Context, keys []engine.Key) error {
	err := s.Engine.Delete(ctx, keys)
	s.wrote()
	return err
}

func (s *stopAfterWrites) PutMeta(ctx context.Context, name string, value []byte) error {
	err := s.Engine.PutMeta(ctx, name, value)
	s.wrote()
	return err
}

// heightBoundaryChildEnv makes the test binary the child of
// TestSetBlockHeightIsABlockBoundary: "DIR".
const heightBoundaryChildEnv = "UTXOSTORE_HEIGHT_BOUNDARY_CHILD"

// TestSetBlockHeightIsABlockBoundary: under SyncBlock, writes are durable
// at block boundaries, and for a client that drives the height itself
// (Create, Spend, SetBlockHeight; no ConnectBlock) SetBlockHeight is that
// boundary. A child on sozu under SyncBlock stores P, creates and spends
// C, sets the height to 2 and is killed with SIGKILL; the reopened store
// must hold all of it. SetBlockHeight used to leave them in the engine's
// log buffer, which the kill lost: the reopened store was empty.
func TestSetBlockHeightIsABlockBoundary(t *testing.T) {
	p := spendTx("P", []wire.OutPoint{{Hash: chainhash.Hash{0xa1}}}, 1, 5e8)
	c := spendTx("C", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	open := func(t *testing.T, dir string) *DB {
		e, err := sozu.Open(dir, sozu.Options{Sync: engine.SyncBlock})
		if err != nil {
			t.Fatal(err)
		}
		db, err := Open(ctx, e, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	if dir := os.Getenv(heightBoundaryChildEnv); dir != "" {
		db := open(t, dir)
		for _, step := range []func() error{
			func() error { return db.SetBlockHeight(ctx, 1) },
			func() error { _, err := db.Create(ctx, p, 1, mined(1)); return err },
			func() error { _, err := db.Create(ctx, c, 1); return err },
			func() error { _, err := db.Spend(ctx, c); return err },
			func() error { return db.SetBlockHeight(ctx, 2) },
		} {
			if err := step(); err != nil {
				t.Fatal(err)
			}
		}
		waitToBeKilled()
	}
	dir := filepath.Join(t.TempDir(), "sozu")
	killChildAtItsStop(t, "TestSetBlockHeightIsABlockBoundary", heightBoundaryChildEnv+"="+dir)
	db := open(t, dir)
	defer db.Close()
	if h := db.GetBlockHeight(); h != 2 {
		t.Errorf("the reopened store's height is %d, want 2", h)
	}
	if _, err := db.Get(ctx, c.ID); err != nil {
		t.Fatalf("C after the kill: %v", err)
	}
	if sd := mustGet(t, db, p.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != c.ID {
		t.Errorf("P:0 after the kill is spent by %v, want C", sd)
	}
}

// removalChildEnv makes the test binary the child of
// TestRemovingATransactionLeavesNoBlockPendingOnIt: "CASE DIR".
const removalChildEnv = "UTXOSTORE_REMOVAL_CHILD"

// TestRemovingATransactionLeavesNoBlockPendingOnIt: block 1 mines Q,
// block 2 spends all of it, and their set statistics are left pending, to
// be worked out from the blocks' transactions and the outputs they spent.
// A child on sozu under SyncAlways then removes Q, by a client's Delete or
// by the prune a client's SetBlockHeight runs, and is killed with SIGKILL.
// The reopened store must work its statistics out and pass verify. It
// used to fail to, for good: the pending blocks needed Q, which the store
// no longer held.
func TestRemovingATransactionLeavesNoBlockPendingOnIt(t *testing.T) {
	p := spendTx("P", []wire.OutPoint{{Hash: chainhash.Hash{0xa1}}}, 1, 5e8)
	q := spendTx("Q", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	c := spendTx("C", []wire.OutPoint{out(q, 0)}, 1, 3e8)
	opts := Options{BlockHeightRetention: MinBlockHeightRetention}
	open := func(t *testing.T, dir string) *DB {
		e, err := sozu.Open(dir, sozu.Options{Sync: engine.SyncAlways})
		if err != nil {
			t.Fatal(err)
		}
		db, err := Open(ctx, e, opts)
		if err != nil {
			t.Fatalf("opening the store: %v", err)
		}
		return db
	}
	removals := map[string]func(db *DB) error{
		"delete":           func(db *DB) error { return db.Delete(ctx, q.ID) },
		"set-block-height": func(db *DB) error { return db.SetBlockHeight(ctx, 2+2*MinBlockHeightRetention) },
	}
	if spec := os.Getenv(removalChildEnv); spec != "" {
		name, dir, _ := strings.Cut(spec, " ")
		db := open(t, dir)
		mustCreate(t, db, p, 0, mined(0))
		genesis := Block{Hash: chainhash.DoubleHashH([]byte("g")), Height: 0, Txs: []*chain.Tx{coinbaseTx("g", 1, 50e8)}}
		b1 := blockAfter(genesis, q)
		connectAll(t, db, []Block{genesis, b1, blockAfter(b1, c)})
		if err := removals[name](db); err != nil {
			t.Fatal(err)
		}
		waitToBeKilled()
	}
	for name := range removals {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sozu")
			killChildAtItsStop(t, "TestRemovingATransactionLeavesNoBlockPendingOnIt", removalChildEnv+"="+name+" "+dir)
			db := open(t, dir)
			defer db.Close()
			if _, err := db.Get(ctx, q.ID); !errors.Is(err, model.ErrTxNotFound) {
				t.Fatalf("Q after the kill: %v, want it removed", err)
			}
			if _, err := db.Summary(ctx); err != nil {
				t.Fatalf("the summary after the kill: %v", err)
			}
			mustVerify(t, db)
		})
	}
}
