package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/utxostore/utxostore/server"
)

// dialElectrum connects to the daemon's Electrum listener, for a test
// that writes and reads raw lines; every read and write fails after d.
func dialElectrum(t *testing.T, srv *server.Server, d time.Duration) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", srv.ElectrumAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReaderSize(c, 1<<20)
}

// TestElectrumAnswersAPipeliningClient: a client that writes many
// requests at once and reads every answer as it comes (how a wallet
// subscribes to its addresses) gets every answer. The daemon used to cut
// such a client off once more than its queue of answers waited unsent,
// which happens as soon as requests are answered faster than the
// connection carries them.
func TestElectrumAnswersAPipeliningClient(t *testing.T) {
	srv, _ := indexedDaemon(t, 3, server.Options{})
	c, r := dialElectrum(t, srv, time.Minute)
	const n = 20_000
	var lines strings.Builder
	for id := range n {
		fmt.Fprintf(&lines, `{"jsonrpc":"2.0","id":%d,"method":"blockchain.block.header","params":[%d]}`+"\n", id, id%3)
	}
	written := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte(lines.String()))
		written <- err
	}()
	for i := range n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d of %d answers: %v", i, n, err)
		}
		var a struct {
			ID    int             `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.ID != i || a.Error != nil {
			t.Fatalf("answer %d: %.200s (%v)", i, line, err)
		}
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}

// TestElectrumBoundsABatchsAnswers: a batch whose answers would pass
// 16 MiB (here a 64 KiB line of requests for 2,016 headers each, answered
// with 600 times its size) is refused with an error saying what to do, not built
// in memory, and the connection goes on serving.
func TestElectrumBoundsABatchsAnswers(t *testing.T) {
	srv, _ := indexedDaemon(t, 300, server.Options{})
	c, r := dialElectrum(t, srv, time.Minute)
	const one = `{"jsonrpc":"2.0","id":1,"method":"blockchain.block.headers","params":[0,2016]}`
	line := "[" + strings.TrimSuffix(strings.Repeat(one+",", (64<<10)/(len(one)+1)), ",") + "]\n"
	ask := func(line string) string {
		t.Helper()
		if _, err := c.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		answer, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return answer
	}
	if answer := ask(line); len(answer) > 1<<20 || !strings.Contains(answer, "send fewer requests at once") {
		t.Fatalf("a batch of %d bytes whose answers pass the bound was answered with %d bytes: %.300s", len(line), len(answer), answer)
	}
	if answer := ask(`[` + one + `,` + one + `]` + "\n"); !strings.Contains(answer, `"count":300`) {
		t.Fatalf("a small batch after the refused one: %.300s", answer)
	}
}
