package main

import (
	"encoding/json"
	"io"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/utxostore/utxostore/index"
)

// TestImportThroughADaemonSurvivesSIGKILL kills the daemon with SIGKILL
// while `import --server` feeds it blocks, restarts it and reruns the
// import, again and again: pebble and sozu, --sync always and block, with
// and without the address index. Each kill comes after the import has had
// a few more blocks acknowledged, so it lands anywhere in a block's writes.
// Every store must end with the summary of a direct import, and every
// index level with the store, holding the chain's balances.
func TestImportThroughADaemonSurvivesSIGKILL(t *testing.T) {
	kills, blocks := 20, 400
	if *long {
		kills, blocks = 100, 1500
	}
	chainFile := chainPrefix(t, blocks)
	want := lastLine(t, "import", "--engine", "memory", "--quiet", chainFile)
	type setup struct {
		engine, sync string
		index        bool
	}
	var setups []setup
	for _, engine := range []string{"pebble", "sozu"} {
		for _, sync := range []string{"always", "block"} {
			for _, index := range []bool{false, true} {
				setups = append(setups, setup{engine, sync, index})
			}
		}
	}
	killsEach := (kills + len(setups) - 1) / len(setups)
	for _, s := range setups {
		name := s.engine + "/" + s.sync
		if s.index {
			name += "/index"
		}
		t.Run(name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			store := []string{"--engine", s.engine, "--data", data}
			serve := append([]string{"serve", "--create", "--sync", s.sync, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, store...)
			if s.index {
				serve = append(serve, "--index")
			}
			for i := range killsEach {
				killDaemonMidImport(t, startDaemon(t, serve...), 1+i%3, chainFile)
			}
			d := startDaemon(t, serve...)
			if _, stderr, err := run(t, "import", "--server", d.grpc, "--quiet", chainFile); err != nil {
				t.Fatalf("the import after %d SIGKILLs of the daemon: %v\n%s\ndaemon:\n%s", killsEach, err, stderr, d.log())
			}
			if err := d.stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("SIGTERM: %v\n%s", err, d.log())
			}
			if got := lastLine(t, append([]string{"info"}, store...)...); got != want {
				t.Fatalf("after %d SIGKILLs of the daemon and a rerun:\n%s\nwant\n%s", killsEach, got, want)
			}
			if s.index {
				checkIndexHoldsChain(t, filepath.Join(data, "index"), chainFile, want)
			}
		})
	}
}

// checkOneTip expects the daemon's /api/status to name one block: the
// tip's height (bestHeight) and the store's block height agree.
func checkOneTip(t *testing.T, d *daemon) {
	t.Helper()
	var status struct {
		Blockbook struct {
			BestHeight uint32 `json:"bestHeight"`
		} `json:"blockbook"`
		Utxostore struct {
			Height uint32 `json:"height"`
		} `json:"utxostore"`
	}
	getJSON(t, "http://"+d.http+"/api/status", &status)
	if status.Blockbook.BestHeight != status.Utxostore.Height {
		t.Fatalf("after a restart the tip is at height %d and the store's block height is %d", status.Blockbook.BestHeight, status.Utxostore.Height)
	}
}

// killDaemonMidImport runs `import --server` against d and SIGKILLs the
// daemon once the import has reported `reports` progress lines (25 blocks
// each, acknowledged by the daemon). The import must then fail. Before
// the import, the daemon must report one tip.
func killDaemonMidImport(t *testing.T, d *daemon, reports int, chainFile string) {
	t.Helper()
	checkOneTip(t, d)
	imp, seen, stderr := startImport(t, reports, "import", "--server", d.grpc, "--progress-blocks", "25", chainFile)
	if len(seen) < reports {
		imp.Wait()
		t.Fatalf("the import ended after %d progress lines, before the daemon could be killed:\n%s", len(seen), d.log())
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	if ws, ok := d.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the daemon ended by itself, not by the SIGKILL:\n%s", d.log())
	}
	io.Copy(io.Discard, stderr)
	if err := imp.Wait(); err == nil {
		t.Fatalf("the import finished although the daemon was killed after %s", seen[len(seen)-1])
	}
}

// checkIndexHoldsChain opens the address index at dir and expects its tip
// to be the chain file's last block, and the balance of every output
// script to be what the chain's blocks give it.
func checkIndexHoldsChain(t *testing.T, dir, chainFile, summary string) {
	t.Helper()
	var sum struct {
		Height   uint32 `json:"height"`
		Satoshis uint64 `json:"satoshis"`
	}
	if err := json.Unmarshal([]byte(summary), &sum); err != nil {
		t.Fatal(err)
	}
	idx, err := index.Open(dir, index.Options{Coin: "Bitcoin"})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	best, ok, err := idx.BestBlock()
	if err != nil || !ok {
		t.Fatalf("the index has no tip (%v)", err)
	}
	if last := lastBlockHash(t, chainFile); best.Height != sum.Height || best.Hash != last {
		t.Fatalf("the index's tip is %s at height %d; the store's is %s at height %d", best.Hash, best.Height, last, sum.Height)
	}
	var total uint64
	for script, tot := range chainScriptTotals(t, chainFile) {
		if isDataScript(script) {
			continue
		}
		bal, err := idx.Balance([]byte(script))
		if err != nil {
			t.Fatal(err)
		}
		if bal.Balance != tot.received-tot.sent || bal.Sent != tot.sent {
			t.Fatalf("script %x: index balance %d sent %d, the chain says %d and %d", script, bal.Balance, bal.Sent, tot.received-tot.sent, tot.sent)
		}
		total += bal.Balance
	}
	if total != sum.Satoshis {
		t.Fatalf("the index's balances sum to %d, the store's UTXO set to %d", total, sum.Satoshis)
	}
}
