package utxo

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/model"
)

// prefixCrashChildEnv makes the test binary the child of
// TestEveryDurablePrefixOfABlockRecovers: "ENGINE DIR WRITES".
const prefixCrashChildEnv = "UTXOSTORE_PREFIX_CRASH_CHILD"

// prefixCrashOptions: a block height retention of 4 and an unmined
// retention of 2, so that the target block prunes, cleans up and lifts a
// preservation. (Four blocks is the least retention whose pending set
// statistics survive a crash.)
var prefixCrashOptions = Options{BlockHeightRetention: 4}

// prefixTarget is the height of the block the test stops inside, the
// chain's last.
const prefixTarget = 6

// TestEveryDurablePrefixOfABlockRecovers: a block's writes are deferred
// but the last (finishBlock), and a kill loses the deferred writes an
// engine still buffers; a power cut may instead keep any prefix of them.
// For every n, a child process connects a chain on sozu and on pebble
// under SyncAlways, stops after the n-th write of the target block, makes
// the writes so far durable, and is killed with SIGKILL. The reopened
// store connects the rest of the chain and must end as a store that never
// crashed: the same set and statistics (verify), C's spend of P:0 the
// chain's though C is pruned, L conflicting, M cleaned up with P:2 free,
// Q's preservation lifted. The target block mines W (beating the mempool's
// L to P:1), the mempool's N and X, prunes C, cleans up M and lifts Q's
// preservation; n runs until the child connects it whole.
func TestEveryDurablePrefixOfABlockRecovers(t *testing.T) {
	if spec := os.Getenv(prefixCrashChildEnv); spec != "" {
		runPrefixCrashChild(t, spec)
		return
	}
	sc := newPrefixScenario()
	reference := newStore(t, prefixCrashOptions)
	for k := range sc.blocks {
		sc.mempoolBefore(t, reference, k)
		connectAll(t, reference, sc.blocks[k:k+1])
	}
	sc.check(t, reference)
	want := summary(t, reference)
	for _, name := range []string{"sozu", "pebble"} {
		t.Run(name, func(t *testing.T) {
			for writes := 1; ; writes++ {
				dir := filepath.Join(t.TempDir(), strconv.Itoa(writes))
				if !killPrefixChild(t, name, dir, writes) {
					if writes < 5 {
						t.Fatalf("the target block took %d writes, fewer than its steps", writes-1)
					}
					t.Logf("killed after each of the target block's %d writes", writes-1)
					return
				}
				db, err := Open(ctx, openCrashEngine(t, name, dir), prefixCrashOptions)
				if err != nil {
					t.Fatalf("reopening after a kill after write %d of block %d: %v", writes, prefixTarget, err)
				}
				tip, _, err := db.Tip(ctx)
				if err != nil {
					t.Fatal(err)
				}
				connectAll(t, db, sc.blocks[tip.Height+1:])
				if got := summary(t, db); got != want {
					t.Fatalf("killed after write %d of block %d:\n%+v\nwant, as without the kill,\n%+v", writes, prefixTarget, got, want)
				}
				sc.check(t, db)
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// prefixScenario is the test's chain and what the mempool does before its
// blocks. P and Q are stored mined before the chain.
type prefixScenario struct {
	p, q, l, m, n *chain.Tx
	blocks        []Block
}

func newPrefixScenario() prefixScenario {
	p := spendTx("P", []wire.OutPoint{{Hash: chainhash.Hash{0xa1}}}, 4, 5e8)
	q := spendTx("Q", []wire.OutPoint{{Hash: chainhash.Hash{0xa2}}}, 1, 5e8)
	c := spendTx("C", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	e := spendTx("E", []wire.OutPoint{out(q, 0)}, 1, 4e8)
	d := spendTx("D", []wire.OutPoint{out(c, 0)}, 1, 3e8)
	sc := prefixScenario{p: p, q: q,
		l: spendTx("L", []wire.OutPoint{out(p, 1)}, 1, 4e8),
		m: spendTx("M", []wire.OutPoint{out(p, 2)}, 1, 4e8),
		n: spendTx("N", []wire.OutPoint{out(p, 3)}, 1, 4e8)}
	w := spendTx("W", []wire.OutPoint{out(p, 1)}, 1, 3e8)
	x := spendTx("X", []wire.OutPoint{out(d, 0)}, 1, 2e8)
	sc.blocks = []Block{{Hash: chainhash.DoubleHashH([]byte("g")), Height: 0, Txs: []*chain.Tx{coinbaseTx("g", 1, 50e8)}}}
	for len(sc.blocks) <= prefixTarget {
		var txs []*chain.Tx
		switch len(sc.blocks) {
		case 1:
			txs = []*chain.Tx{c, e}
		case 2:
			txs = []*chain.Tx{d}
		case prefixTarget:
			txs = []*chain.Tx{w, sc.n, x}
		}
		sc.blocks = append(sc.blocks, blockAfter(sc.blocks[len(sc.blocks)-1], txs...))
	}
	return sc
}

// mempoolBefore does what the scenario does before block k is connected.
func (sc prefixScenario) mempoolBefore(t *testing.T, db *DB, k int) {
	t.Helper()
	createAndSpend := func(tx *chain.Tx, height uint32) {
		mustCreate(t, db, tx, height)
		if _, err := db.Spend(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	switch k {
	case 0:
		mustCreate(t, db, sc.p, 0, mined(0))
		mustCreate(t, db, sc.q, 0, mined(0))
	case 2: // Q, spent in full by block 1, is kept until the target
		if err := db.PreserveTransactions(ctx, []chainhash.Hash{sc.q.ID}, prefixTarget); err != nil {
			t.Fatal(err)
		}
	case prefixTarget - 1: // old at the target: unmined since 4, retention 2
		createAndSpend(sc.m, prefixTarget-2)
	case prefixTarget:
		createAndSpend(sc.l, prefixTarget-1)
		createAndSpend(sc.n, prefixTarget-1)
	}
}

// check asserts what the target block leaves, beyond the set.
func (sc prefixScenario) check(t *testing.T, db *DB) {
	t.Helper()
	mustVerify(t, db)
	again := spendTx("P:0 again", []wire.OutPoint{out(sc.p, 0)}, 1, 4e8)
	if err := db.ConnectBlock(ctx, blockAfter(sc.blocks[len(sc.blocks)-1], again)); !errors.Is(err, model.ErrSpent) {
		t.Errorf("a block spending P:0 again: %v, want SPENT, by C since pruned", err)
	}
	if m := mustGet(t, db, sc.l.ID); !m.Conflicting {
		t.Errorf("L, which lost P:1 to the block, is not conflicting")
	}
	if _, err := db.Get(ctx, sc.m.ID); !errors.Is(err, model.ErrTxNotFound) {
		t.Errorf("M, old at the target, is still stored (%v)", err)
	}
	if sd := mustGet(t, db, sc.p.ID).Outputs[2].SpendingData; sd != nil {
		t.Errorf("P:2 is still spent by %s, whom the cleanup removed", sd.TxID)
	}
	if m := mustGet(t, db, sc.n.ID); m.UnminedSince != 0 {
		t.Errorf("N, mined by the target, is unmined since %d", m.UnminedSince)
	}
	if m := mustGet(t, db, sc.q.ID); m.PreserveUntil != 0 || m.DeleteAtHeight == 0 {
		t.Errorf("Q after its preservation expired: preserve until %d, delete at %d", m.PreserveUntil, m.DeleteAtHeight)
	}
}

// killPrefixChild runs the child that stops after the given write of the
// target block and kills it there; it reports false when the child
// connected the target block whole instead.
func killPrefixChild(t *testing.T, name, dir string, writes int) bool {
	t.Helper()
	cmd, stdout := startStoppingChild(t, "TestEveryDurablePrefixOfABlockRecovers", fmt.Sprintf("%s=%s %s %d", prefixCrashChildEnv, name, dir, writes))
	stopped, connected := false, -1
	for sc := bufio.NewScanner(stdout); !stopped && sc.Scan(); {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "connected "); ok {
			connected, _ = strconv.Atoi(h)
		}
		stopped = line == "stopped"
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	switch {
	case stopped && connected == prefixTarget-1:
		return true
	case !stopped && connected >= prefixTarget:
		return false
	}
	t.Fatalf("the child stopping after write %d of block %d stopped: %v, connected up to %d", writes, prefixTarget, stopped, connected)
	return false
}

// runPrefixCrashChild is the child: it runs the scenario on a new store
// and stops after WRITES writes of the target block (stopAfterWrites,
// durable).
func runPrefixCrashChild(t *testing.T, spec string) {
	fields := strings.Fields(spec)
	if len(fields) != 3 {
		t.Fatalf("%s=%q: want ENGINE DIR WRITES", prefixCrashChildEnv, spec)
	}
	writes, err := strconv.Atoi(fields[2])
	if err != nil {
		t.Fatal(err)
	}
	stopper := &stopAfterWrites{Engine: openCrashEngine(t, fields[0], fields[1]), left: -1, durable: true}
	db, err := Open(ctx, stopper, prefixCrashOptions)
	if err != nil {
		t.Fatal(err)
	}
	sc := newPrefixScenario()
	for k := range sc.blocks {
		sc.mempoolBefore(t, db, k)
		if k == prefixTarget {
			stopper.left = writes
		}
		connectAll(t, db, sc.blocks[k:k+1])
		fmt.Printf("connected %d\n", k)
	}
}
