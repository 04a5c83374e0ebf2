package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine/redis"
	"github.com/utxostore/utxostore/internal/testdata"
)

// The summary line of the real chain, from a UTXO set computed independently
// in package utxo's tests (its txouts, total_amount and muhash, Core's
// statistics, by an independent implementation in TestSnapshotCoreDumpAndLoad);
// every engine must end an import with it.
const btcChainSummary = `{"blocks":14132,"txs":14247,"utxos":13417,"satoshis":70660000000000,"height":14131,"digest":"d64f9c7ce54f713fb471a852626ac52f6081f20dbc30054f153df09650e398b9","txouts":13416,"total_amount":70655000000000,"muhash":"859e27f17a6cce9768b75dd0dbd969890157d29a152b0f4a0afa6c67cbcd5975"}`

// lastLine runs the binary and returns its last stdout line.
func lastLine(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(utxostoreBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("utxostore %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return lines[len(lines)-1]
}

// startImport starts utxostore with args (an import) and reads its
// stderr until it has reported progress `reports` times. It returns the
// running command, the progress lines read (fewer than reports when the
// import ended first), and the rest of its stderr.
func startImport(t *testing.T, reports int, args ...string) (*exec.Cmd, []string, io.Reader) {
	t.Helper()
	return startProgress(t, "imported", reports, args...)
}

// startProgress starts utxostore with args and reads its stderr until it
// has printed `reports` progress lines that start with prefix. It returns
// the running command, those lines (fewer when the command ended first),
// and the rest of its stderr.
func startProgress(t *testing.T, prefix string, reports int, args ...string) (*exec.Cmd, []string, io.Reader) {
	t.Helper()
	cmd := exec.Command(utxostoreBin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	lines := bufio.NewScanner(stderr)
	for len(seen) < reports && lines.Scan() {
		if strings.HasPrefix(lines.Text(), prefix) {
			seen = append(seen, lines.Text())
		}
	}
	return cmd, seen, stderr
}

// killMidImport starts an import and SIGKILLs it once it has reported
// progress `reports` times: real blocks are committed, more are in flight.
func killMidImport(t *testing.T, reports int, args ...string) {
	t.Helper()
	killAfterProgress(t, "imported", reports, args...)
}

// killAfterProgress starts the command and SIGKILLs it once it has printed
// `reports` progress lines that start with prefix; it fails the test when
// the command ends first.
func killAfterProgress(t *testing.T, prefix string, reports int, args ...string) {
	t.Helper()
	cmd, seen, _ := startProgress(t, prefix, reports, args...)
	// A command that has ended already is told by its exit status.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("utxostore %s ended (%v) after %d of %d progress lines, before it was killed:\n%s", args[0], err, len(seen), reports, strings.Join(seen, "\n"))
	}
}

// chainPrefix writes the first n blocks of the real chain file to a
// temporary file, to keep crash tests of the slower engines short.
func chainPrefix(t *testing.T, n int) string {
	t.Helper()
	data, err := os.ReadFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	end := 0
	for i := 0; i < n; i++ {
		end += 8 + int(binary.LittleEndian.Uint32(data[end+4:]))
	}
	path := filepath.Join(t.TempDir(), "prefix.blk")
	if err := os.WriteFile(path, data[:end], 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportResumesAfterSIGKILL kills imports at several points (under the
// default --sync=always and under --sync=block), reruns them, and expects the
// summary of an uninterrupted in-memory import and a consistent store.
func TestImportResumesAfterSIGKILL(t *testing.T) {
	chainFile := chainPrefix(t, 2000)
	want := lastLine(t, "import", "--engine", "memory", "--quiet", chainFile)
	if !strings.Contains(want, `"blocks":2000,`) {
		t.Fatalf("the reference import says %s", want)
	}
	for _, engine := range []string{"pebble", "sozu"} {
		for _, sync := range []string{"always", "block"} {
			t.Run(engine+"/"+sync, func(t *testing.T) {
				data := filepath.Join(t.TempDir(), "data")
				args := []string{"import", "--engine", engine, "--data", data, "--sync", sync, "--progress-blocks", "200"}
				for _, reports := range []int{1, 3} {
					killMidImport(t, reports, append(args, chainFile)...)
				}
				// Finish under --sync=block: the resume logic is the same,
				// and it keeps the test fast.
				finish := []string{"import", "--engine", engine, "--data", data, "--sync", "block", "--quiet", chainFile}
				if got := lastLine(t, finish...); got != want {
					t.Fatalf("after SIGKILLs and a rerun:\n%s\nwant\n%s", got, want)
				}
				if got := lastLine(t, "info", "--engine", engine, "--data", data); got != want {
					t.Fatalf("info after the import:\n%s", got)
				}
				if out := lastLine(t, "verify", "--engine", engine, "--data", data); !strings.Contains(out, `"records":`) {
					t.Fatalf("verify: %s", out)
				}
			})
		}
	}
}

// TestEveryEngineImportsTheSameChain imports the real chain on every engine
// (redis when a cluster is configured) and expects the one summary line.
func TestEveryEngineImportsTheSameChain(t *testing.T) {
	chainFile := testdata.Path(t, "btc-mainnet-0-14131.blk")
	engines := [][]string{
		{"--engine", "memory"},
		{"--engine", "pebble", "--sync", "block"},
		{"--engine", "sozu", "--sync", "block"},
	}
	if addrs := os.Getenv("UTXOSTORE_REDIS_ADDRS"); addrs != "" {
		namespace := "import-test-" + strings.ReplaceAll(t.TempDir(), "/", "-")
		t.Cleanup(func() {
			if err := redis.Drop(context.Background(), redis.Options{Addrs: strings.Split(addrs, ","), Namespace: namespace}); err != nil {
				t.Errorf("removing the test's namespace %q: %v", namespace, err)
			}
		})
		engines = append(engines, []string{"--engine", "redis", "--redis", addrs, "--redis-namespace", namespace})
	} else {
		t.Log("UTXOSTORE_REDIS_ADDRS is not set: the redis engine is not imported into (scripts/test.sh sets it)")
	}
	for _, flags := range engines {
		t.Run(flags[1], func(t *testing.T) {
			t.Parallel() // Redis's import waits on round trips more than it computes: the others fill that time
			args := append([]string{"import", "--quiet", "--data", t.TempDir()}, flags...)
			if got := lastLine(t, append(args, chainFile)...); got != btcChainSummary {
				t.Fatalf("%s import:\n%s\nwant\n%s", flags[1], got, btcChainSummary)
			}
		})
	}
}

// TestImportResumesAfterAFullDisk runs imports whose writes start failing
// partway (a file size limit, as a full disk fails them), expects each to
// stop with an error that says so, then reruns the import with room to
// finish and expects the summary of an uninterrupted import.
func TestImportResumesAfterAFullDisk(t *testing.T) {
	chainFile := chainPrefix(t, 2000)
	want := lastLine(t, "import", "--engine", "memory", "--quiet", chainFile)
	for _, engine := range []string{"pebble", "sozu"} {
		for _, sync := range []string{"always", "block"} {
			t.Run(engine+"/"+sync, func(t *testing.T) {
				data := filepath.Join(t.TempDir(), "data")
				args := []string{"import", "--engine", engine, "--data", data, "--sync", sync, "--quiet", chainFile}
				// The second limit is below what the first run left in
				// the largest file: the rerun fails at once, as on a disk
				// that is still full.
				for _, limit := range []int64{256 << 10, 64 << 10} {
					importOnAFullDisk(t, limit, args...)
				}
				if got := lastLine(t, args...); got != want {
					t.Fatalf("after imports on a full disk and a rerun:\n%s\nwant\n%s", got, want)
				}
				if out := lastLine(t, "verify", "--engine", engine, "--data", data); !strings.Contains(out, `"records":`) {
					t.Fatalf("verify: %s", out)
				}
			})
		}
	}
}

// TestServeOnAFullDisk imports blocks into a daemon whose writes start
// failing partway (a file size limit). The import must fail; a Sozu daemon
// must then report itself not ready, saying why, and a Pebble one ends
// itself (pebble's rule). Restarted with room, the daemon takes the rest
// of the import, and the store ends as an uninterrupted import does.
func TestServeOnAFullDisk(t *testing.T) {
	chainFile := chainPrefix(t, 2000)
	want := lastLine(t, "import", "--engine", "memory", "--quiet", chainFile)
	for _, engine := range []string{"sozu", "pebble"} {
		t.Run(engine, func(t *testing.T) {
			store := []string{"--engine", engine, "--data", filepath.Join(t.TempDir(), "data")}
			serve := append([]string{"serve", "--sync", "block", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, store...)
			create := append(serve, "--create")
			d := startDaemonCmd(t, fullDiskCommand(256<<10, create...), create)
			_, stderr, err := run(t, "client", "--server", d.grpc, "--quiet", "import", chainFile)
			if err == nil {
				t.Fatalf("the import into a daemon on a full disk succeeded:\n%s", stderr)
			}
			t.Logf("the import: %s", strings.TrimSpace(stderr))
			if engine == "pebble" {
				select {
				case err := <-d.exited:
					t.Logf("the daemon ended: %v", err)
				case <-time.After(60 * time.Second):
					t.Fatalf("the pebble daemon went on after a failed log write:\n%s", d.log())
				}
			} else {
				code, body := httpGet(t, "http://"+d.http+"/health/ready")
				if code != http.StatusServiceUnavailable || !strings.Contains(body, syscall.EFBIG.Error()) {
					t.Fatalf("readiness after a failed write: %d %s\n%s", code, body, d.log())
				}
				d.stop(t, syscall.SIGTERM)
			}

			d = startDaemon(t, serve...)
			if _, stderr, err := run(t, "client", "--server", d.grpc, "--quiet", "import", chainFile); err != nil {
				t.Fatalf("the import after a restart with room: %v\n%s", err, stderr)
			}
			if err := d.stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("SIGTERM: %v\n%s", err, d.log())
			}
			if got := lastLine(t, append([]string{"info"}, store...)...); got != want {
				t.Fatalf("after a full disk and a restart:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// fullDiskCommand is a command that runs utxostore with args where no
// file may grow past limit bytes (RLIMIT_FSIZE, set by the shell's ulimit
// in its 512-byte blocks), as on a disk that fills up.
func fullDiskCommand(limit int64, args ...string) *exec.Cmd {
	script := fmt.Sprintf(`ulimit -f %d && exec "$0" "$@"`, limit/512)
	return exec.Command("sh", append([]string{"-c", script, utxostoreBin}, args...)...)
}

// importOnAFullDisk runs utxostore with args where no file may grow past
// limit bytes (RLIMIT_FSIZE, set by the shell's ulimit in its 512-byte
// blocks) and expects it to fail, saying that a file grew too large.
func importOnAFullDisk(t *testing.T, limit int64, args ...string) {
	t.Helper()
	out, err := fullDiskCommand(limit, args...).CombinedOutput()
	if err == nil {
		t.Fatalf("the import finished within a file size limit of %d bytes: raise the chain prefix or lower the limit\n%s", limit, out)
	}
	if !bytes.Contains(out, []byte(syscall.EFBIG.Error())) {
		t.Fatalf("the import on a full disk failed (%v) without saying a write failed:\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("limit %d bytes: %s", limit, lines[len(lines)-1])
}

// TestImportRefusesAnotherNetworksBlockFile imports a mainnet blk*.dat
// file into a testnet store: refused before any block is read (the one
// here is not even a block), the new data directory left uncreated.
func TestImportRefusesAnotherNetworksBlockFile(t *testing.T) {
	junk := bytes.Repeat([]byte{0xAB}, 200)
	frame := append(binary.LittleEndian.AppendUint32([]byte{0xf9, 0xbe, 0xb4, 0xd9}, uint32(len(junk))), junk...)
	chainFile := filepath.Join(t.TempDir(), "mainnet.blk")
	if err := os.WriteFile(chainFile, frame, 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	store := []string{"--engine", "sozu", "--data", data, "--network", "testnet"}
	cmd := exec.Command(utxostoreBin, append(append([]string{"import", "--quiet"}, store...), chainFile)...)
	out, err := cmd.CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("block file of another network: its magic f9beb4d9 is mainnet's, not testnet's")) {
		t.Fatalf("importing mainnet blocks into a testnet store: %v\n%s", err, out)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused import left its data directory %s behind (%v)", data, err)
	}

	// The same file sent to a daemon serving a testnet store: the client
	// asks the daemon its network and refuses the file itself.
	d := startDaemon(t, append([]string{"serve", "--create", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, store...)...)
	defer d.stop(t, syscall.SIGTERM)
	_, stderr, err := run(t, "client", "--server", d.grpc, "--quiet", "import", chainFile)
	if err == nil || !strings.Contains(stderr, "block file of another network: its magic f9beb4d9 is mainnet's, not testnet's") {
		t.Fatalf("importing mainnet blocks into a testnet daemon: %v\n%s", err, stderr)
	}
}
