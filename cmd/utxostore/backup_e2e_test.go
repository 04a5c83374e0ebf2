package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	pb "github.com/utxostore/utxostore/proto/utxostorepb"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/internal/dirstate"
	"github.com/utxostore/utxostore/internal/testdata"
)

// backupLine is the JSON line backup ends with.
type backupLine struct {
	Dir         string `json:"dir"`
	Height      uint32 `json:"height"`
	Hash        string `json:"hash"`
	TxOuts      uint64 `json:"txouts"`
	TotalAmount uint64 `json:"total_amount"`
	MuHash      string `json:"muhash"`
}

// TestBackupOfALiveDaemon backs up a daemon with the address index, on
// sozu and on pebble, while
// `import --server` feeds it the Bitcoin chain, and SIGKILLs it the moment
// the backup returns, the import still running. The copy is the chain up
// to the block the backup names, as a direct import of those blocks
// makes it (and a dump from the daemon, taken as the blocks flow, is the
// set at the block it names): info prints that summary with the backup's statistics, verify
// recomputes them, the copy's address index holds the chain's balances
// there, and `serve --data COPY --index` opens it with every store at that
// block and answers for it. Dumps from the serving copy (--server) equal
// byte for byte the dumps of the stopped copy (--data).
func TestBackupOfALiveDaemon(t *testing.T) {
	file := testdata.Path(t, btcFile)
	for _, engine := range []string{"sozu", "pebble"} {
		t.Run(engine, func(t *testing.T) { backUpALiveDaemon(t, engine, file) })
	}
}

func backUpALiveDaemon(t *testing.T, engine, file string) {
	dir := t.TempDir()
	data, copyDir := filepath.Join(dir, "data"), filepath.Join(dir, "copy")
	listen := []string{"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}
	src := startDaemon(t, append([]string{"serve", "--create", "--engine", engine, "--index", "--sync", "block", "--data", data}, listen...)...)
	imp, seen, impErr := startImport(t, 10, "import", "--server", src.grpc, "--progress-blocks", "100", file)
	go io.Copy(io.Discard, impErr)
	if len(seen) < 10 {
		imp.Wait()
		t.Fatalf("the import ended after %d progress lines, before the backup:\n%s", len(seen), src.log())
	}
	// A dump while the blocks flow is the set at the block it names.
	live := runSnapshotCmd(t, "dump", "--format", formatTeranode, "--server", src.grpc, filepath.Join(dir, "live"))
	stdout, stderr, err := run(t, "backup", "--server", src.grpc, copyDir)
	src.cmd.Process.Signal(syscall.SIGKILL)
	<-src.exited
	if err != nil {
		t.Fatalf("backup: %v\n%s\ndaemon:\n%s", err, stderr, src.log())
	}
	if imp.Wait() == nil {
		t.Fatal("the import had ended when the backup returned: no block flowed during the backup")
	}
	var b backupLine
	if err := json.Unmarshal([]byte(finalLine(stdout)), &b); err != nil {
		t.Fatalf("backup printed %q: %v", stdout, err)
	}
	if b.Dir != copyDir || b.Height == 0 || b.Height >= btcTip {
		t.Fatalf("backup of a daemon mid-import: %+v", b)
	}
	noLeftovers(t, dir, ".tmp-")
	var atDump backupLine
	if err := json.Unmarshal([]byte(lastLine(t, "import", "--engine", "memory", "--quiet", chainPrefix(t, int(live.BaseHeight)+1))), &atDump); err != nil {
		t.Fatal(err)
	}
	if live.TxOuts != atDump.TxOuts || live.TotalAmount != atDump.TotalAmount || live.MuHash != atDump.MuHash {
		t.Fatalf("a dump from the daemon at block %d: %s; the chain there: %+v", live.BaseHeight, live.stats(), atDump)
	}

	prefix := chainPrefix(t, int(b.Height)+1)
	want := lastLine(t, "import", "--engine", "memory", "--quiet", prefix)
	info := lastLine(t, "info", "--data", copyDir)
	if info != want {
		t.Fatalf("the copy's info:\n%s\nwant that of the chain to the backup's block %d:\n%s", info, b.Height, want)
	}
	var sum backupLine
	if err := json.Unmarshal([]byte(info), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Height != b.Height || sum.TxOuts != b.TxOuts || sum.TotalAmount != b.TotalAmount || sum.MuHash != b.MuHash {
		t.Fatalf("the copy's info %s is not the backup's %+v", info, b)
	}
	if _, stderr, err := run(t, "verify", "--data", copyDir); err != nil {
		t.Fatalf("verify of the copy: %v\n%s", err, stderr)
	}
	// The copy's address index and block store stand at the backup's block
	// as copied, before the serve below could settle them.
	checkIndexHoldsChain(t, filepath.Join(copyDir, "index"), prefix, want)
	blocks, err := blockstore.Open(filepath.Join(copyDir, "blocks"), blockstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tip, ok := blocks.Tip()
	if err := blocks.Close(); err != nil {
		t.Fatal(err)
	}
	if !ok || tip != b.Height {
		t.Fatalf("the copy's block store ends at height %d (holding blocks: %v), the backup's block is at %d", tip, ok, b.Height)
	}

	cp := serveCopy(t, copyDir, b, listen)
	out := t.TempDir()
	fromServer := map[string]snapshotLine{}
	for _, format := range []string{formatCore, formatTeranode} {
		fromServer[format] = runSnapshotCmd(t, "dump", "--format", format, "--server", cp.grpc, filepath.Join(out, "server-"+format))
	}
	if err := cp.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, cp.log())
	}
	for _, format := range []string{formatCore, formatTeranode} {
		fromData := runSnapshotCmd(t, "dump", "--format", format, "--data", copyDir, filepath.Join(out, "data-"+format))
		if got := fromServer[format]; got.stats() != fromData.stats() || got.BaseHash != b.Hash || fromData.BaseHash != b.Hash {
			t.Fatalf("%s dump from the daemon: %s at %s; from the data directory: %s at %s", format, got.stats(), got.BaseHash, fromData.stats(), fromData.BaseHash)
		}
		sameFiles(t, filepath.Join(out, "server-"+format), filepath.Join(out, "data-"+format))
	}
}

// serveCopy serves a backup's copy with the index, and checks that every
// store stands at the backup's block and that the daemon serves it.
func serveCopy(t *testing.T, copyDir string, b backupLine, listen []string) *daemon {
	t.Helper()
	cp := startDaemon(t, append([]string{"serve", "--index", "--data", copyDir}, listen...)...)
	checkLevel(t, cp, true)
	var block struct {
		Hash   string `json:"hash"`
		Height uint32 `json:"height"`
	}
	getJSON(t, "http://"+cp.http+"/api/v2/block/"+b.Hash, &block)
	if block.Hash != b.Hash || block.Height != b.Height {
		t.Fatalf("the copy's daemon serves block %s as %+v", b.Hash, block)
	}
	return cp
}

// sameFiles fails unless a and b, files or directories of files, hold the
// same bytes under the same names.
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	stateA, stateB := dirstate.Of(t, a), dirstate.Of(t, b)
	if len(stateA) == 0 || len(stateA) != len(stateB) {
		t.Fatalf("%s holds %d files, %s %d", a, len(stateA), b, len(stateB))
	}
	for path, st := range stateA {
		rel := strings.TrimPrefix(path, a)
		if stateB[b+rel] != st {
			t.Fatalf("%s%s differs: %q, %q", b, rel, st, stateB[b+rel])
		}
	}
}

// TestBackupRefusals: a backup with no daemon, into a directory that holds
// files or lies inside the data directory (named as it is, or through a
// link, which the check once took for another place, so that the copy was
// written inside the data directory), of a store that holds no block
// or of an engine that keeps no files gives a clear error and writes nothing: the target is as it was
// and no temporary directory is left beside it.
func TestBackupRefusals(t *testing.T) {
	dir := t.TempDir()
	listen := []string{"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}
	data := filepath.Join(t.TempDir(), "data")
	sozu := startDaemon(t, append([]string{"serve", "--create", "--data", data}, listen...)...)
	memory := startDaemon(t, append([]string{"serve", "--engine", "memory"}, listen...)...)
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "keep"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link to the data directory leads a target inside it while its
	// path names another place.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, server, target, want string
	}{
		{"no daemon", "127.0.0.1:1", filepath.Join(dir, "new"), "Unavailable"},
		{"a directory with files", sozu.grpc, full, "is not empty (it holds keep)"},
		{"an empty store", sozu.grpc, filepath.Join(dir, "new"), "holds no block"},
		{"the memory engine", memory.grpc, filepath.Join(dir, "new"), "engine memory cannot copy its store"},
		{"a directory inside the data directory", sozu.grpc, filepath.Join(data, "sozu", "backup"), "is inside the daemon's data directory"},
		{"a directory inside the data directory through a link", sozu.grpc, filepath.Join(link, "backup"), "is inside the daemon's data directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := dirstate.Of(t, dir)
			_, stderr, err := run(t, "backup", "--server", c.server, c.target)
			if err == nil {
				t.Fatal("backup succeeded")
			}
			mustContain(t, "backup's error", stderr, c.want)
			dirstate.MustBeUnchanged(t, dir, before)
			noLeftovers(t, filepath.Join(data, "sozu"), "backup")
			noLeftovers(t, data, "backup")
		})
	}
	if strings.Contains(sozu.log(), "level=ERROR") {
		t.Fatalf("a refused backup is logged as a server fault:\n%s", sozu.log())
	}
}

// TestADumpReaderThatStopsReadingHoldsNoBlock: a client that asks the
// daemon for a dump with its headers (about 2.7 MB, several replies) and
// stops reading after its first reply (with small flow-control windows, so
// the daemon cannot send far ahead) does not keep
// blocks out: the daemon spools the dump and lets blocks flow again, and
// the next import connects its blocks while the dump's stream stays open.
func TestADumpReaderThatStopsReadingHoldsNoBlock(t *testing.T) {
	src := startDaemon(t, "serve", "--engine", "memory",
		"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	if _, stderr, err := run(t, "import", "--server", src.grpc, "--quiet", chainPrefix(t, 14000)); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	cc, err := grpc.NewClient(src.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := pb.NewUtxoStoreClient(cc).DumpCoins(ctx, &pb.DumpCoinsRequest{Headers: true})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := stream.Recv(); err != nil || first.Tip == nil || first.Tip.Height != 13999 {
		t.Fatalf("the dump's first reply: %v %v", first, err)
	}
	impCtx, impCancel := context.WithTimeout(context.Background(), time.Minute)
	defer impCancel()
	imp := exec.CommandContext(impCtx, utxostoreBin, "import", "--server", src.grpc, "--quiet", testdata.Path(t, btcFile))
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import with a dump's reader stalled: %v (%v)\n%s\ndaemon:\n%s", err, impCtx.Err(), out, src.log())
	}
}
