package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// utxostoreBin is the utxostore command built once by TestMain; the end-to-end
// tests run it as a user would.
var utxostoreBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "utxostore-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	utxostoreBin = filepath.Join(dir, "utxostore")
	if out, err := exec.Command("go", "build", "-o", utxostoreBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building utxostore: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemon is a running `utxostore serve`.
type daemon struct {
	cmd        *exec.Cmd
	grpc, http string
	mu         sync.Mutex
	stderr     bytes.Buffer
	exited     chan error
}

var listening = regexp.MustCompile(`listening grpc=(\S+:\d+) http=(\S+:\d+)`)

// listeningAddrs reads the bound addresses from the daemon's "listening"
// record, in either --log-format.
func listeningAddrs(line string) (grpc, http string, ok bool) {
	if m := listening.FindStringSubmatch(line); m != nil {
		return m[1], m[2], true
	}
	var rec struct{ Msg, GRPC, HTTP string }
	if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" && rec.GRPC != "" && rec.HTTP != "" {
		return rec.GRPC, rec.HTTP, true
	}
	return "", "", false
}

// startDaemon runs the utxostoreBin with args (a serve or demo command on port 0)
// and waits for the line naming the bound addresses.
func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	return startDaemonCmd(t, exec.Command(utxostoreBin, args...), args)
}

// startDaemonCmd is startDaemon for a command that runs utxostoreBin with
// args in some other way (under a shell's ulimit, say).
func startDaemonCmd(t *testing.T, cmd *exec.Cmd, args []string) *daemon {
	t.Helper()
	d := &daemon{cmd: cmd, exited: make(chan error, 1)}
	pipe, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			d.mu.Lock()
			d.stderr.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			if grpc, http, ok := listeningAddrs(sc.Text()); ok {
				found <- [2]string{grpc, http}
			}
		}
		io.Copy(io.Discard, pipe)
		d.exited <- d.cmd.Wait()
	}()
	t.Cleanup(func() { d.cmd.Process.Kill() })
	select {
	case m := <-found:
		d.grpc, d.http = m[0], m[1]
		return d
	case err := <-d.exited:
		t.Fatalf("utxostore %v exited before listening (%v):\n%s", args, err, d.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("utxostore %v did not listen within 60s:\n%s", args, d.log())
	}
	return nil
}

func (d *daemon) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

// stop sends sig and waits for the exit.
func (d *daemon) stop(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	d.cmd.Process.Signal(sig)
	select {
	case err := <-d.exited:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("utxostore did not exit after %v:\n%s", sig, d.log())
		return nil
	}
}

// run runs the utxostoreBin to completion.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(utxostoreBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// httpGet returns the status and body of a GET.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	return httpGetToken(t, url, "")
}

// httpGetToken is httpGet with "Authorization: Bearer <token>" when token
// is not empty.
func httpGetToken(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s: want %q in:\n%s", what, want, got)
		}
	}
}
