package utxo

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/engine/sozu"
)

// crashChildEnv makes the test binary the child of
// TestConcurrentCallersSurviveKill: "ENGINE DIR".
const crashChildEnv = "UTXOSTORE_STORE_CRASH_CHILD"

// crashClients is the number of concurrent callers in the child.
const crashClients = 16

func openCrashEngine(t testing.TB, name, dir string) engine.Engine {
	var e engine.Engine
	var err error
	switch name {
	case "sozu":
		e, err = sozu.Open(dir, sozu.Options{Sync: engine.SyncAlways})
	case "pebble":
		e, err = pebble.Open(dir, pebble.Options{Sync: engine.SyncAlways})
	default:
		err = fmt.Errorf("unknown engine %q", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestConcurrentCallersSurviveKill runs a child process whose concurrent
// callers create transactions and spend their outputs through the store
// under SyncAlways with the batcher merging their writes, and kills it
// with SIGKILL mid-stream. Every create and spend the child acknowledged
// (printed after the call returned) must be in the reopened store.
func TestConcurrentCallersSurviveKill(t *testing.T) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		name, dir, _ := strings.Cut(spec, " ")
		runCrashChild(t, name, dir)
		return
	}
	for _, name := range []string{"sozu", "pebble"} {
		t.Run(name, func(t *testing.T) {
			for round := range 3 {
				dir := filepath.Join(t.TempDir(), name)
				acked := killChildAfter(t, name, dir, 150+100*round)
				checkAcknowledged(t, name, dir, acked)
			}
		})
	}
}

// ack is one acknowledged operation: tx created, or tx spent output 0 of
// parent.
type ack struct {
	created bool
	tx      chainhash.Hash
	parent  chainhash.Hash
}

// killChildAfter starts the child, reads its acknowledgements until it has
// printed n, kills it with SIGKILL and returns them.
func killChildAfter(t *testing.T, name, dir string, n int) []ack {
	cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentCallersSurviveKill$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+name+" "+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []ack
	sc := bufio.NewScanner(stdout)
	for len(acked) < n && sc.Scan() {
		var kind, tx, parent string
		if _, err := fmt.Sscan(sc.Text(), &kind, &tx, &parent); err != nil {
			continue // the test framework's own output
		}
		a := ack{created: kind == "created"}
		if err := chainhash.Decode(&a.tx, tx); err != nil {
			t.Fatalf("child printed %q: %v", sc.Text(), err)
		}
		if err := chainhash.Decode(&a.parent, parent); err != nil {
			t.Fatalf("child printed %q: %v", sc.Text(), err)
		}
		acked = append(acked, a)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(acked) < n {
		t.Fatalf("the child stopped after %d acknowledgements, want %d", len(acked), n)
	}
	return acked
}

// runCrashChild is the child: each client creates a chain of
// transactions, each spending the previous one's output, and prints every
// create and spend once the store has acknowledged it. It runs until
// killed.
func runCrashChild(t *testing.T, name, dir string) {
	db, err := Open(ctx, openCrashEngine(t, name, dir), Options{BatchWait: DefaultBatchWait})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	print := func(kind string, tx, parent chainhash.Hash) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf("%s %s %s\n", kind, tx, parent)
	}
	var wg sync.WaitGroup
	for c := range crashClients {
		wg.Go(func() {
			prev := coinbaseTx(fmt.Sprintf("crash-root-%d-%d", c, time.Now().UnixNano()), 1, 1000)
			if _, err := db.Create(ctx, prev, 0); err != nil {
				panic(err)
			}
			print("created", prev.ID, prev.ID)
			for n := 0; ; n++ {
				next := spendTx(fmt.Sprintf("crash-%d-%d", c, n), []wire.OutPoint{out(prev, 0)}, 1, 1000)
				if _, err := db.Spend(ctx, next, WithBlockHeight(200)); err != nil {
					panic(err)
				}
				print("spent", next.ID, prev.ID)
				if _, err := db.Create(ctx, next, 0); err != nil {
					panic(err)
				}
				print("created", next.ID, prev.ID)
				prev = next
			}
		})
	}
	wg.Wait()
}

// checkAcknowledged reopens the store and finds every acknowledged
// operation in it.
func checkAcknowledged(t *testing.T, name, dir string, acked []ack) {
	db, err := Open(ctx, openCrashEngine(t, name, dir), Options{})
	if err != nil {
		t.Fatalf("reopening after the kill: %v", err)
	}
	defer db.Close()
	for _, a := range acked {
		if a.created {
			if _, err := db.Get(ctx, a.tx); err != nil {
				t.Fatalf("acknowledged create of %s lost: %v", a.tx, err)
			}
			continue
		}
		resp, err := db.GetSpend(ctx, &Spend{TxID: a.parent, Vout: 0})
		if err != nil {
			t.Fatalf("acknowledged spend of %s:0 by %s: %v", a.parent, a.tx, err)
		}
		if resp.SpendingData == nil || resp.SpendingData.TxID != a.tx {
			t.Fatalf("acknowledged spend of %s:0 by %s lost: spender %v", a.parent, a.tx, resp.SpendingData)
		}
	}
}
