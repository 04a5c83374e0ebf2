package utxo

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/model"
)

// prefixCrashChildEnv makes the test binary the child of
// TestEveryDurablePrefixOfABlockRecovers: "ENGINE DIR STEP WRITES", STEP
// connect or disconnect.
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
// but the last (finishBlock's chain state), and a kill loses the deferred
// writes an engine still buffers; a power cut may instead keep any prefix
// of them. For every n, a child process connects a chain on sozu and on
// pebble under SyncAlways, stops after the n-th write of the target block,
// or of its disconnection, makes the writes so far durable, and is killed
// with SIGKILL. The reopened store connects the block again, or
// disconnects it again while it is the tip, and must end as a store that
// never crashed: the same set and statistics (verify), every transaction
// of the scenario read back alike. The target block mines W (beating the
// mempool's L to P:1), the mempool's N and X, prunes C, cleans up M and
// lifts Q's preservation; connected, C's spend of P:0 must stay the
// chain's. n runs until the child gets through the block whole.
func TestEveryDurablePrefixOfABlockRecovers(t *testing.T) {
	if spec := os.Getenv(prefixCrashChildEnv); spec != "" {
		runPrefixCrashChild(t, spec)
		return
	}
	sc := newPrefixScenario()
	connected := newStore(t, prefixCrashOptions)
	sc.connect(t, connected, nil, 0)
	sc.checkConnected(t, connected)
	disconnected := newStore(t, prefixCrashOptions)
	sc.connect(t, disconnected, nil, 0)
	if err := disconnected.DisconnectBlock(ctx, sc.blocks[prefixTarget]); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, disconnected)
	for _, name := range []string{"sozu", "pebble"} {
		for _, undo := range []bool{false, true} {
			want, step := connected, "connect"
			if undo {
				want, step = disconnected, "disconnect"
			}
			t.Run(name+"/"+step, func(t *testing.T) {
				for writes := 1; ; writes++ {
					dir := filepath.Join(t.TempDir(), strconv.Itoa(writes))
					if !killPrefixChild(t, name, dir, step, writes) {
						if writes < 5 {
							t.Fatalf("the target block's %s took %d writes, fewer than its steps", step, writes-1)
						}
						t.Logf("killed after each of the %d writes of the target block's %s", writes-1, step)
						return
					}
					db, err := Open(ctx, openCrashEngine(t, name, dir), prefixCrashOptions)
					if err != nil {
						t.Fatalf("reopening after a kill after write %d: %v", writes, err)
					}
					tip, _, err := db.Tip(ctx)
					if err != nil {
						t.Fatal(err)
					}
					switch {
					case !undo:
						connectAll(t, db, sc.blocks[tip.Height+1:])
					case tip.Height == prefixTarget:
						if err := db.DisconnectBlock(ctx, sc.blocks[prefixTarget]); err != nil {
							t.Fatalf("disconnecting again after a kill after write %d: %v", writes, err)
						}
					}
					sc.sameAs(t, db, want, fmt.Sprintf("killed after write %d", writes))
					if !undo {
						sc.checkConnected(t, db)
					}
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// prefixScenario is the test's chain and what the mempool does before its
// blocks. P and Q are stored mined before the chain.
type prefixScenario struct {
	p, q, l, m, n *chain.Tx
	blocks        []Block
}

// txids are the scenario's transactions: P and Q, the mempool's, and the
// blocks'.
func (sc prefixScenario) txids() []chainhash.Hash {
	ids := []chainhash.Hash{sc.p.ID, sc.q.ID, sc.l.ID, sc.m.ID}
	for _, b := range sc.blocks {
		for _, tx := range b.Txs {
			ids = append(ids, tx.ID)
		}
	}
	return ids
}

// sameAs fails unless db holds what want holds: the set's summary, and
// each of the scenario's transactions as Get reads it (or its absence),
// but the wall-clock time it was stored at.
func (sc prefixScenario) sameAs(t *testing.T, db, want *DB, what string) {
	t.Helper()
	mustVerify(t, db)
	if got, want := summary(t, db), summary(t, want); got != want {
		t.Fatalf("%s:\n%+v\nwant, as without the kill,\n%+v", what, got, want)
	}
	for _, txid := range sc.txids() {
		got, gotErr := db.Get(ctx, txid)
		exp, expErr := want.Get(ctx, txid)
		if gotErr != nil || expErr != nil {
			if !errors.Is(gotErr, model.ErrTxNotFound) || !errors.Is(expErr, model.ErrTxNotFound) {
				t.Fatalf("%s: %s reads %v, want %v", what, txid, gotErr, expErr)
			}
			continue
		}
		got.CreatedAt, exp.CreatedAt = 0, 0
		if !reflect.DeepEqual(got, exp) {
			t.Fatalf("%s: %s reads\n%+v\nwant, as without the kill,\n%+v", what, txid, got, exp)
		}
	}
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

// connect runs the scenario on db: what the mempool does before each
// block, and the block. With stopper, the target block stops after that
// many writes; onConnected hears of each block connected.
func (sc prefixScenario) connect(t *testing.T, db *DB, stopper *stopAfterWrites, writes int, onConnected ...func(int)) {
	t.Helper()
	for k := range sc.blocks {
		sc.mempoolBefore(t, db, k)
		if k == prefixTarget && stopper != nil {
			stopper.left = writes
		}
		connectAll(t, db, sc.blocks[k:k+1])
		for _, f := range onConnected {
			f(k)
		}
	}
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

// checkConnected asserts what the target block leaves.
func (sc prefixScenario) checkConnected(t *testing.T, db *DB) {
	t.Helper()
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
// target block's step (connect or disconnect) and kills it there; it
// reports false when the child got through the step whole instead.
func killPrefixChild(t *testing.T, name, dir, step string, writes int) bool {
	t.Helper()
	cmd, stdout := startStoppingChild(t, "TestEveryDurablePrefixOfABlockRecovers", fmt.Sprintf("%s=%s %s %s %d", prefixCrashChildEnv, name, dir, step, writes))
	stopped, last := false, ""
	for sc := bufio.NewScanner(stdout); !stopped && sc.Scan(); {
		if line := sc.Text(); line == "stopped" {
			stopped = true
		} else if strings.HasPrefix(line, "connected ") || line == "disconnected" {
			last = line
		}
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	before, through := fmt.Sprint("connected ", prefixTarget-1), fmt.Sprint("connected ", prefixTarget)
	if step == "disconnect" {
		before, through = through, "disconnected"
	}
	switch {
	case stopped && last == before:
		return true
	case !stopped && last == through:
		return false
	}
	t.Fatalf("the child stopping after write %d of the target block's %s: stopped %v, last said %q", writes, step, stopped, last)
	return false
}

// runPrefixCrashChild is the child: it runs the scenario on a new store
// and stops after WRITES writes of the target block's STEP
// (stopAfterWrites, durable).
func runPrefixCrashChild(t *testing.T, spec string) {
	fields := strings.Fields(spec)
	if len(fields) != 4 {
		t.Fatalf("%s=%q: want ENGINE DIR STEP WRITES", prefixCrashChildEnv, spec)
	}
	step := fields[2]
	writes, err := strconv.Atoi(fields[3])
	if err != nil {
		t.Fatal(err)
	}
	stopper := &stopAfterWrites{Engine: openCrashEngine(t, fields[0], fields[1]), left: -1, durable: true}
	db, err := Open(ctx, stopper, prefixCrashOptions)
	if err != nil {
		t.Fatal(err)
	}
	sc := newPrefixScenario()
	var connectStopper *stopAfterWrites
	if step == "connect" {
		connectStopper = stopper
	}
	sc.connect(t, db, connectStopper, writes, func(k int) { fmt.Printf("connected %d\n", k) })
	if step == "disconnect" {
		stopper.left = writes
		if err := db.DisconnectBlock(ctx, sc.blocks[prefixTarget]); err != nil {
			t.Fatal(err)
		}
		fmt.Println("disconnected")
	}
}
