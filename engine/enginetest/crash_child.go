package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
	"time"
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
}

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
	send := func(format string, n uint64) {
		if _, err := fmt.Fprintf(ack, format+"\n", n); err != nil {
			os.Exit(4) // the parent stopped listening
		}
	}
	for n := orders.Start; n < orders.Start+orders.Ops; n++ {
		if err := genCrashOp(orders.Seed, n, orders.KeySpace).apply(ctx, e); err != nil {
			t.Fatalf("crash child: %v", err)
		}
		send("op %d", n)
		if n%orders.CheckpointEvery == 0 {
			if err := e.Checkpoint(ctx, uint32(n)); err != nil {
				t.Fatalf("crash child: checkpoint after op %d: %v", n, err)
			}
			send("checkpoint %d", n)
		}
	}
	// Out of orders: wait to be killed, as a crashed process would have
	// been, without closing the engine.
	for {
		time.Sleep(time.Hour)
	}
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
