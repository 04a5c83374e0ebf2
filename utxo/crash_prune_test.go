package utxo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// pruneCrashChildEnv makes the test binary the child of
// TestKillWhilePruningKeepsThePrunedSpends: "ENGINE DIR".
const pruneCrashChildEnv = "UTXOSTORE_PRUNE_CRASH_CHILD"

// pruneCrashOptions are the store's options in the child and after it:
// C, fully spent at block 2, is pruned at block 6. (Four blocks is the
// least retention whose pending set statistics survive a crash.)
var pruneCrashOptions = Options{BlockHeightRetention: 4}

// TestKillWhilePruningKeepsThePrunedSpends: a child process connects a
// chain in which C, mined at block 1 spending P:0, is spent in full at
// block 2 and pruned at block 6, on sozu and on pebble under SyncAlways,
// and is killed with SIGKILL just after the write that deleted C. The
// reopened store connects the rest of the chain, then must refuse a block
// spending P:0 again: C's spend is the chain's. The prune used to delete C
// first and record it among its parents' deleted children in a second
// write, so a kill between the two left P:0 spent by a transaction the
// store could not place, and the block connected: a double spend.
func TestKillWhilePruningKeepsThePrunedSpends(t *testing.T) {
	if spec := os.Getenv(pruneCrashChildEnv); spec != "" {
		name, dir, _ := strings.Cut(spec, " ")
		runPruneCrashChild(t, name, dir)
		return
	}
	for _, name := range []string{"sozu", "pebble"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			killPruneChild(t, name, dir)
			db, err := Open(ctx, openCrashEngine(t, name, dir), pruneCrashOptions)
			if err != nil {
				t.Fatalf("reopening after the kill: %v", err)
			}
			defer db.Close()
			p, blocks := pruneCrashChain()
			tip, _, err := db.Tip(ctx)
			if err != nil {
				t.Fatal(err)
			}
			connectAll(t, db, blocks[tip.Height+1:])
			again := spendTx("X", []wire.OutPoint{out(p, 0)}, 1, 4e8)
			if err := db.ConnectBlock(ctx, blockAfter(blocks[len(blocks)-1], again)); !errors.Is(err, model.ErrSpent) {
				t.Fatalf("a block spending P:0 again after the kill: %v, want SPENT, by C since pruned", err)
			}
			mustVerify(t, db)
		})
	}
}

// pruneCrashChain is P, stored mined before the chain, and the chain:
// genesis, C spending P:0, D spending C:0, then empty blocks to height 8.
func pruneCrashChain() (*chain.Tx, []Block) {
	p := spendTx("P", []wire.OutPoint{{Hash: chainhash.Hash{0xa1}}}, 2, 5e8)
	c := spendTx("C", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	d := spendTx("D", []wire.OutPoint{out(c, 0)}, 1, 3e8)
	blocks := []Block{{Hash: chainhash.DoubleHashH([]byte("g")), Height: 0, Txs: []*chain.Tx{coinbaseTx("g", 1, 50e8)}}}
	for len(blocks) <= 8 {
		var txs []*chain.Tx
		switch len(blocks) {
		case 1:
			txs = []*chain.Tx{c}
		case 2:
			txs = []*chain.Tx{d}
		}
		blocks = append(blocks, blockAfter(blocks[len(blocks)-1], txs...))
	}
	return p, blocks
}

// killPruneChild runs the child until it says it stopped, and kills it.
func killPruneChild(t *testing.T, name, dir string) {
	t.Helper()
	cmd, stdout := startStoppingChild(t, "TestKillWhilePruningKeepsThePrunedSpends", fmt.Sprintf("%s=%s %s", pruneCrashChildEnv, name, dir))
	stopped := false
	for sc := bufio.NewScanner(stdout); !stopped && sc.Scan(); {
		stopped = sc.Text() == "stopped"
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !stopped {
		t.Fatal("the child ended without deleting C")
	}
}

// runPruneCrashChild is the child: it stores P, connects the chain and
// waits to be killed once the write deleting C has returned.
func runPruneCrashChild(t *testing.T, name, dir string) {
	p, blocks := pruneCrashChain()
	c := blocks[1].Txs[1]
	eng := &stopAfterRemoving{Engine: openCrashEngine(t, name, dir), key: engine.Key(record.MasterKey(c.ID))}
	db, err := Open(ctx, eng, pruneCrashOptions)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, p, 0, mined(0))
	connectAll(t, db, blocks)
	t.Fatal("connected every block without deleting C")
}

// stopAfterRemoving passes every call to its engine; once an Update that
// removed key has returned, it makes the removal durable and waits to be
// killed (waitToBeKilled).
type stopAfterRemoving struct {
	engine.Engine
	key engine.Key
}

func (s *stopAfterRemoving) Update(ctx context.Context, updates []engine.Update) ([]error, error) {
	removed := -1
	wrapped := append([]engine.Update(nil), updates...)
	for i := range wrapped {
		if wrapped[i].Key != s.key {
			continue
		}
		fn := wrapped[i].Fn
		wrapped[i].Fn = func(current []byte) (engine.Mutation, error) {
			m, err := fn(current)
			if err == nil && m.Action == engine.Remove {
				removed = i
			}
			return m, err
		}
	}
	errs, err := s.Engine.Update(ctx, wrapped)
	if err == nil && removed >= 0 && errs[removed] == nil {
		// The removal may be a deferred write, which a kill now would
		// lose; a power cut may not. A durable write makes it, and every
		// write before it, survive the kill.
		if err := s.Engine.PutMeta(context.Background(), "prune crash test", nil); err != nil {
			panic(err)
		}
		waitToBeKilled()
	}
	return errs, err
}
