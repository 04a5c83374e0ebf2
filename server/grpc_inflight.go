package server

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/stats"
)

// inflight bounds the memory gRPC calls hold and how long a call may keep
// its connection waiting for its message. A call's message size is known
// only once the message has arrived, and a client may open a call and
// never send it; such a call must cost its own connection, never the
// calls of others. So:
//
//   - One connection reads one call's message at a time. A call waits for
//     its connection's turn when it begins, and keeps it until its message
//     has arrived and is reserved from the budget, so what one connection's
//     calls hold while their messages arrive is one message (at most
//     --max-message) and the flow-control window of each waiting call
//     (grpcStreamWindow).
//   - A call whose message has arrived reserves the message's size from the
//     budget (--max-inflight-bytes) before it is handled, waiting, with its
//     connection's turn, while the budget is spent; it gives the size back
//     when it ends.
//   - A call whose message has not arrived within --grpc-read-timeout of
//     its start has its connection closed.
//
// The token is checked from a call's headers (tapAuth) before the call
// begins, so a refused call takes no turn and reads nothing.
//
// It is a gRPC stats handler because Begin and InPayload run in the call's
// own goroutine, Begin before the message is read and InPayload once it
// has been, and End always follows Begin.
type inflight struct {
	budget      *semaphore.Weighted
	size        int64
	readTimeout time.Duration
	log         *slog.Logger
	awaiting    prometheus.Gauge
	// listener finds a call's connection to close it; set by Start.
	listener *limitListener
}

// grpcStreamWindow is a call's HTTP/2 flow-control window: what a client
// can send of a message before the call reads it. gRPC opens the window
// to the whole message when the call reads; a fixed window also keeps
// gRPC from growing it, as it does by its bandwidth estimate, for calls
// that wait for their turn.
const grpcStreamWindow = 64 << 10

// grpcConnWindow is a connection's flow-control window. gRPC gives it back
// as data arrives, not as calls read it, so it bounds no memory; it is
// large so that a message over a long round trip is not held back.
const grpcConnWindow = 16 << 20

func newInflight(budget int64, readTimeout time.Duration, log *slog.Logger, awaiting prometheus.Gauge) *inflight {
	return &inflight{budget: semaphore.NewWeighted(budget), size: budget, readTimeout: readTimeout, log: log, awaiting: awaiting}
}

// connTurn is one connection's turn to read a message.
type connTurn struct {
	turn *semaphore.Weighted
	conn *limitedConn // nil when the listener does not know it
}

// call is what one call holds.
type call struct {
	method  string
	conn    *connTurn
	hasTurn bool
	arrived atomic.Bool
	held    int64 // of the budget
	timer   *time.Timer
}

type connTurnKey struct{}
type callKey struct{}

func (f *inflight) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	t := &connTurn{turn: semaphore.NewWeighted(1)}
	if f.listener != nil {
		t.conn = f.listener.conn(info.RemoteAddr)
	}
	return context.WithValue(ctx, connTurnKey{}, t)
}

func (f *inflight) HandleConn(context.Context, stats.ConnStats) {}

func (f *inflight) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	t, _ := ctx.Value(connTurnKey{}).(*connTurn)
	return context.WithValue(ctx, callKey{}, &call{method: info.FullMethodName, conn: t})
}

func (f *inflight) HandleRPC(ctx context.Context, s stats.RPCStats) {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok {
		return
	}
	switch s := s.(type) {
	case *stats.Begin:
		f.awaiting.Inc()
		c.timer = time.AfterFunc(f.readTimeout, func() { f.cutOff(c) })
		if c.conn != nil {
			// An error means the call's context ended while waiting: its
			// message will not be read.
			c.hasTurn = c.conn.turn.Acquire(ctx, 1) == nil
		}
	case *stats.InPayload:
		if c.arrived.Swap(true) {
			return // every call here has one request message
		}
		f.awaiting.Dec()
		c.timer.Stop()
		n := min(int64(s.Length), f.size)
		if f.budget.Acquire(ctx, n) == nil {
			c.held = n
		}
		c.giveTurnBack()
	case *stats.End:
		if c.timer != nil { // it began
			c.timer.Stop()
			if !c.arrived.Swap(true) {
				f.awaiting.Dec()
			}
		}
		c.giveTurnBack()
		if c.held > 0 {
			f.budget.Release(c.held)
			c.held = 0
		}
	}
}

func (c *call) giveTurnBack() {
	if c.hasTurn {
		c.hasTurn = false
		c.conn.turn.Release(1)
	}
}

// cutOff closes the connection of a call whose message has not arrived in
// time: its calls end, and what they hold with them.
func (f *inflight) cutOff(c *call) {
	if c.arrived.Load() || c.conn == nil || c.conn.conn == nil {
		return
	}
	f.log.Info("closed a gRPC connection: a call's message did not arrive in time",
		"remote", c.conn.conn.RemoteAddr().String(), "grpc_method", c.method, "after", f.readTimeout)
	c.conn.conn.Close()
}
