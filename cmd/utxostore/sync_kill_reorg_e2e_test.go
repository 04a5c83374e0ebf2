package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/utxostore/utxostore/internal/btcdtest"
)

var metricsLine = regexp.MustCompile(`msg="serving metrics" url=(http://\S+/metrics)`)

// startSync runs sync with its metrics on a free port and returns the
// process and the metrics URL.
func startSync(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(utxostoreBin, append(args, "--metrics", "127.0.0.1:0")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if m := metricsLine.FindStringSubmatch(lines.Text()); m != nil {
			go func() {
				for lines.Scan() {
				}
			}()
			return cmd, m[1]
		}
	}
	t.Fatal("sync exited without serving its metrics")
	return nil, ""
}

// metricValue reads one unlabelled metric from a metrics page.
func metricValue(url, name string) string {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return value
		}
	}
	return "absent"
}

// TestSyncKilledAroundReorgs kills sync -9 as soon as the node it follows
// has reorganised to a longer branch (so while the follower fetches the
// branch or reorganises the store, or just after), three times; each
// restart ends at the node's tip with the digest of a fresh import of the
// winning chain.
func TestSyncKilledAroundReorgs(t *testing.T) {
	w := btcdtest.NewWallet(t, "kill around reorgs")
	a := btcdtest.Start(t, w.Addr)
	b := btcdtest.Start(t, w.Addr)
	matureCoins(t, a, w)
	data, blockDir := t.TempDir(), t.TempDir()
	syncArgs := []string{"sync", "--quiet", "--network", "simnet", "--data", data, "--peer", a.P2P}
	for round := range 3 {
		b.Connect(t, a)
		waitSameTip(t, a, b)
		b.Disconnect(t, a)
		a.Generate(t, 5) // the losing branch: its coinbases go, the wallet never sees them
		mineWithTxs(t, b, w, 6)

		cmd, metrics := startSync(t, syncArgs...)
		_, height := a.Tip(t)
		btcdtest.WaitFor(t, 60*time.Second, "sync to reach A's tip", func() (bool, string) {
			got := metricValue(metrics, "utxostore_follow_store_height")
			return got == fmt.Sprint(height), "store height " + got
		})
		b.Connect(t, a)
		waitSameTip(t, a, b)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		killed := parseSummary(t, lastLine(t, "info", "--network", "simnet", "--data", data))
		t.Logf("round %d: killed with the store at height %d (A's branch ended at %d, B's at %d)", round, killed.Height, height, height+1)

		got := parseSummary(t, lastLine(t, append(syncArgs, "--stop-at-tip")...))
		if want := importedSummary(t, a, blockDir); got != want {
			t.Fatalf("round %d: after a kill around the reorganisation:\n got %+v\nwant %+v (import of the winning chain)", round, got, want)
		}
	}
}
