package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/utxostore/utxostore/internal/btcdtest"
)

// crashBin is utxostore built with -tags crashpoints: it kills itself with
// SIGKILL right after the step of the block path that UTXOSTORE_CRASH_AT
// names (package blockpath, crashpoints.go).
var (
	crashBinOnce sync.Once
	crashBinPath string
	crashBinErr  error
)

func crashBin(t *testing.T) string {
	t.Helper()
	crashBinOnce.Do(func() {
		crashBinPath = filepath.Join(filepath.Dir(utxostoreBin), "utxostore-crashpoints")
		out, err := exec.Command("go", "build", "-tags", "crashpoints", "-o", crashBinPath, ".").CombinedOutput()
		if err != nil {
			crashBinErr = fmt.Errorf("building utxostore with -tags crashpoints: %v\n%s", err, out)
		}
	})
	if crashBinErr != nil {
		t.Fatal(crashBinErr)
	}
	return crashBinPath
}

// runToCrash runs the crash build with args, stopping after the step at
// ("connect/kept/120"), and expects it to die by SIGKILL there.
func runToCrash(t *testing.T, at string, args ...string) {
	t.Helper()
	cmd := exec.Command(crashBin(t), args...)
	cmd.Env = append(os.Environ(), "UTXOSTORE_CRASH_AT="+at)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("utxostore %s ended (%v) without reaching %s:\n%s", args[0], err, at, out.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("utxostore %s did not reach %s within 2 minutes:\n%s", args[0], at, out.String())
	}
}

// TestImportKilledBetweenSteps stops `import --index` right after each step
// of a block's path (checked, kept, stored, indexed), each time at a later
// block, and runs it again: the store ends with a direct import's summary
// and the index level with it, holding the chain's balances.
func TestImportKilledBetweenSteps(t *testing.T) {
	chainFile := chainPrefix(t, 400)
	want := lastLine(t, "import", "--engine", "memory", "--quiet", chainFile)
	for _, sync := range []string{"always", "block"} {
		t.Run(sync, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args := []string{"import", "--index", "--quiet", "--sync", sync, "--data", data, chainFile}
			for i, step := range []string{"checked", "kept", "stored", "indexed"} {
				runToCrash(t, fmt.Sprintf("connect/%s/%d", step, 100+70*i), args...)
			}
			if got := lastLine(t, args...); got != want {
				t.Fatalf("after a kill between each pair of steps:\n%s\nwant\n%s", got, want)
			}
			checkIndexHoldsChain(t, filepath.Join(data, "index"), chainFile, want)
		})
	}
}

// TestServePeerIndexKilledBetweenSteps follows btcd with `serve --peer
// --index`, killed right after each step of a connection during catch-up
// and after each step of a disconnection in a reorganisation. Each restart
// ends at the node's tip with the digest of a fresh import of the node's
// chain, and every block of it served by /api/v2/block/H.
func TestServePeerIndexKilledBetweenSteps(t *testing.T) {
	w := btcdtest.NewWallet(t, "serve killed between steps")
	a := btcdtest.Start(t, w.Addr)
	b := btcdtest.Start(t, w.Addr)
	matureCoins(t, a, w)
	mineWithTxs(t, a, w, 20)
	data := t.TempDir()
	serve := []string{"serve", "--create", "--index", "--network", "simnet", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--peer", a.P2P}

	for i, step := range []string{"checked", "kept", "stored", "indexed"} {
		runToCrash(t, fmt.Sprintf("connect/%s/%d", step, 30+25*i), serve...)
	}
	checkFollowed(t, serve, a)

	for _, step := range []string{"unindexed", "unstored", "dropped"} {
		b.Connect(t, a)
		waitSameTip(t, a, b)
		b.Disconnect(t, a)
		a.Generate(t, 2) // the branch the store is on, which loses
		checkFollowed(t, serve, a)
		mineWithTxs(t, b, w, 3)
		_, losing := a.Tip(t)
		crash := exec.Command(crashBin(t), serve...)
		crash.Env = append(os.Environ(), fmt.Sprintf("UTXOSTORE_CRASH_AT=disconnect/%s/%d", step, losing))
		d := startDaemonCmd(t, crash, serve)
		b.Connect(t, a) // A takes B's longer branch; the daemon follows
		select {
		case <-d.exited:
		case <-time.After(2 * time.Minute):
			t.Fatalf("the daemon did not reach disconnect/%s/%d:\n%s", step, losing, d.log())
		}
		if ws, ok := d.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the daemon ended without reaching disconnect/%s/%d:\n%s", step, losing, d.log())
		}
		waitSameTip(t, a, b)
		checkFollowed(t, serve, a)
	}
}

// checkFollowed starts the daemon, waits until it serves the node's tip,
// and expects the UTXO set of a fresh import of the node's chain and every
// block of that chain served; then it stops the daemon.
func checkFollowed(t *testing.T, serve []string, node *btcdtest.Node) {
	t.Helper()
	d := startDaemon(t, serve...)
	waitServedTip(t, d, node)
	var status struct {
		Utxostore struct {
			Height   uint32 `json:"height"`
			Utxos    uint64 `json:"utxos"`
			Satoshis uint64 `json:"satoshis"`
			Digest   string `json:"digest"`
		} `json:"utxostore"`
	}
	getJSON(t, "http://"+d.http+"/api/status?summary=true", &status)
	want := importedSummary(t, node, t.TempDir())
	if u := status.Utxostore; u.Height != want.Height || u.Utxos != want.Utxos || u.Satoshis != want.Satoshis || u.Digest != want.Digest {
		t.Fatalf("the daemon serves %+v; a fresh import of the node's chain gives %+v", u, want)
	}
	checkLevel(t, d, true)
	for h := range int64(want.Height) + 1 {
		hash, err := node.RPC.GetBlockHash(h)
		if err != nil {
			t.Fatal(err)
		}
		code, body := httpGet(t, fmt.Sprintf("http://%s/api/v2/block/%d", d.http, h))
		if code != http.StatusOK || !strings.Contains(body, hash.String()) {
			t.Fatalf("/api/v2/block/%d: %d, want the node's block %s:\n%s", h, code, hash, body)
		}
	}
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, d.log())
	}
}
