package server

import (
	"context"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/stats"
)

// inflight bounds the memory that the calls served at once may hold
// together. A call's message size is known only once it is read, so each
// call reserves the largest message it may send (--max-message) from the
// budget (--max-inflight-bytes) before its message is read, and gives it
// back when it ends. A call that finds the budget spent waits, its client's
// bytes held back by HTTP/2 flow control, until another call ends or its
// own context does.
//
// It is a gRPC stats handler because Begin runs in the call's own
// goroutine before the message is read, and End always follows Begin.
type inflight struct {
	budget  *semaphore.Weighted
	perCall int64
}

func newInflight(budget, perCall int64) *inflight {
	return &inflight{budget: semaphore.NewWeighted(budget), perCall: min(perCall, budget)}
}

// reservation records whether a call holds its share of the budget.
type reservation struct{ held bool }

type reservationKey struct{}

func (f *inflight) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, reservationKey{}, &reservation{})
}

func (f *inflight) HandleRPC(ctx context.Context, s stats.RPCStats) {
	r, ok := ctx.Value(reservationKey{}).(*reservation)
	if !ok {
		return
	}
	switch s.(type) {
	case *stats.Begin:
		// An error means the call's context ended while waiting: the
		// client is gone and its message will not be read.
		r.held = f.budget.Acquire(ctx, f.perCall) == nil
	case *stats.End:
		if r.held {
			r.held = false
			f.budget.Release(f.perCall)
		}
	}
}

func (f *inflight) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (f *inflight) HandleConn(context.Context, stats.ConnStats) {}
