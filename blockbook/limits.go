package blockbook

import (
	"context"
	"fmt"
)

// limitError is a request refused because it would pass one of the
// limits on what one request may do (Limits); the HTTP API answers it
// with 400 (outcomeCode), the websocket with an error reply. Its message
// names the limit's flag, so the caller knows what to ask for instead and
// the operator what to raise.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

func overLimit(format string, args ...any) error {
	return &limitError{msg: fmt.Sprintf(format, args...)}
}

// requestWork counts the transactions one API request gathers from the
// address index (--max-request-txs), and ends the work when the request's
// context does: the client left, or the answer could no longer be written.
// A request's handlers share one.
type requestWork struct {
	ctx   context.Context
	left  int
	limit int
}

func (a *API) newWork(ctx context.Context) *requestWork {
	return &requestWork{ctx: ctx, left: a.opts.MaxRequestTxs, limit: a.opts.MaxRequestTxs}
}

// take counts n more transactions, refusing the request past the limit.
func (w *requestWork) take(n int) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if n > w.left {
		return overLimit("the request gathers more than %d transactions, the limit of one request (--max-request-txs); ask for less (a narrower from/to, a smaller gap)", w.limit)
	}
	w.left -= n
	return nil
}

// stopped is the request's context error: each step of a long walk checks
// it, so the walk ends soon after its client leaves.
func (w *requestWork) stopped() error { return w.ctx.Err() }

// Limits are the API's limits, their defaults filled in.
func (a *API) Limits() Limits { return a.opts.Limits }
