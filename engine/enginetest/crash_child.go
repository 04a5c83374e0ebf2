package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// crashEnv carries the child's orders from the parent: when it is set, the
// test binary was started by Crash to be killed.
const crashEnv = "UTXOSTORE_CRASH_CHILD"

// crashAckFD is the child's file descriptor of the acknowledgement pipe
// (the first of exec.Cmd.ExtraFiles), kept apart from stdout, which the
// testing package owns.
const crashAckFD = 3

type crashOrders struct {
	Test            string `json:"test"`
	Dir             string `json:"dir"`
	Seed            int64  `json:"seed"`
	Start           uint64 `json:"start"` // first op to apply
	Ops             uint64 `json:"ops"`   // how many, at most
	KeySpace        int    `json:"keys"`
	CheckpointEvery uint64 `json:"checkpoint_every"`
	// FileSizeLimit is the size no file may grow past once the store is
	// open (CrashHarness.WriteLimit); 0 means none.
	FileSizeLimit int64 `json:"file_size_limit,omitempty"`
	// Deferred: the ops deferredOp names defer their sync
	// (CrashHarness.Deferred).
	Deferred bool `json:"deferred,omitempty"`
}

// deferredOp reports whether op n defers its sync when the harness asks
// for deferred ops: two in three, so that runs of them end in a durable
// op, as a block's writes end in its chain state.
func deferredOp(n uint64) bool { return n%3 != 0 }

// IsCrashChild reports whether this process is a crash child started by
// Crash. A TestMain with expensive setup can skip it in the child; nothing
// else needs to ask, because Crash itself turns into the child.
func IsCrashChild() bool { return os.Getenv(crashEnv) != "" }

// runCrashChild opens the engine and applies the stream from the ordered
// op, writing "op N" after op N returned success and "checkpoint N" after
// a Checkpoint that followed op N returned. Each line is one write to the
// pipe, made only after the engine returned, so the parent can never read
// an acknowledgement of an op that was not done.
func runCrashChild(t *testing.T, h CrashHarness, orders crashOrders) {
	ack := os.NewFile(crashAckFD, "crash-acks")
	if ack == nil {
		t.Fatal("crash child: no acknowledgement pipe on fd 3")
	}
	// The parent holds our stdin; when it goes away, so do we, rather than
	// writing into a store nobody will look at.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
	ctx := context.Background()
	e := h.Open(t, orders.Dir)
	send := func(format string, args ...any) {
		if _, err := fmt.Fprintf(ack, format+"\n", args...); err != nil {
			os.Exit(4) // the parent stopped listening
		}
	}
	if orders.FileSizeLimit > 0 {
		if err := limitFileSize(orders.FileSizeLimit); err != nil {
			t.Fatalf("crash child: %v", err)
		}
	}
	// failed reports a write the file size limit failed, closes the
	// engine (which must not make the failure worse) and waits to be
	// killed. Any other failure is the engine's.
	failed := func(what string, n uint64, err error) {
		if orders.FileSizeLimit == 0 || !errors.Is(err, syscall.EFBIG) {
			t.Fatalf("crash child: %s %d: %v", what, n, err)
		}
		send("failed %s %d: %s", what, n, oneLine(err))
		send("closed: %s", oneLine(e.Close()))
		waitForTheKill()
	}
	for n := orders.Start; n < orders.Start+orders.Ops; n++ {
		opCtx := ctx
		if orders.Deferred && deferredOp(n) {
			opCtx = engine.DeferSync(ctx)
		}
		if err := genCrashOp(orders.Seed, n, orders.KeySpace).apply(opCtx, e); err != nil {
			failed("op", n, err)
		}
		send("op %d", n)
		if n%orders.CheckpointEvery == 0 {
			if err := e.Checkpoint(ctx, uint32(n)); err != nil {
				failed("checkpoint", n, err)
			}
			send("checkpoint %d", n)
		}
	}
	// Out of orders: wait to be killed, as a crashed process would have
	// been, without closing the engine.
	waitForTheKill()
}

// oneLine is err's message on one line (a joined error has several), or
// "ok" for none.
func oneLine(err error) string {
	if err == nil {
		return "ok"
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

func waitForTheKill() {
	for {
		time.Sleep(time.Hour)
	}
}

// The child's acknowledgement lines: "op N" and "checkpoint N" after op
// N, or the Checkpoint that followed it, returned; "failed op N: ERROR"
// or "failed checkpoint N: ERROR" when the file size limit failed it,
// then "closed: ERROR" (or "closed: ok") once the engine's Close
// returned.
type ackKind uint8

const (
	ackOp ackKind = iota
	ackCheckpoint
	ackFailedOp
	ackFailedCheckpoint
	ackClosed
)

type crashAck struct {
	kind ackKind
	n    uint64
	text string // what failed, and how (failures)
	err  error  // the line does not read as an acknowledgement
}

func parseCrashAck(line string) crashAck {
	head, _, _ := strings.Cut(line, ":")
	for _, f := range []struct {
		format string
		kind   ackKind
	}{{"op %d", ackOp}, {"checkpoint %d", ackCheckpoint}, {"failed op %d", ackFailedOp}, {"failed checkpoint %d", ackFailedCheckpoint}} {
		a := crashAck{kind: f.kind, text: line}
		if _, err := fmt.Sscanf(head, f.format, &a.n); err == nil && fmt.Sprintf(f.format, a.n) == head {
			return a
		}
	}
	if strings.HasPrefix(line, "closed: ") {
		return crashAck{kind: ackClosed, text: line}
	}
	return crashAck{err: fmt.Errorf("unreadable acknowledgement %q", line)}
}

func parseCrashOrders(s string) (crashOrders, error) {
	var o crashOrders
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return o, fmt.Errorf("crash child: bad %s: %w", crashEnv, err)
	}
	if o.KeySpace <= 0 || o.CheckpointEvery == 0 || o.Start == 0 {
		return o, fmt.Errorf("crash child: incomplete orders %s", s)
	}
	return o, nil
}
