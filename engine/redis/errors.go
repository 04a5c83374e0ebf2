package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// outcome classifies the error of one command by what it says about the
// command's effect, which is what decides whether it may be sent again.
type outcome uint8

const (
	done      outcome = iota // answered (possibly with redis.Nil)
	notRun                   // refused before running: redirect, failover, no connection
	uncertain                // the connection failed after sending: it may have run
	fatal                    // anything else: report it
)

// notRunPrefixes are the server replies that mean the command did not run
// on this node and will succeed elsewhere or later. sendTo follows an ASK
// at once; one still here is one it could not follow (a second redirect).
// TRYAGAIN is a multi-key command (the CAS script) on a slot whose keys are
// split between a migrating and an importing node: it runs once they are
// together again.
var notRunPrefixes = []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "READONLY", "MASTERDOWN", "NOSCRIPT", "NOREPLICAS"}

func classify(err error) outcome {
	switch {
	case err == nil || errors.Is(err, redis.Nil):
		return done
	case errors.As(err, new(*WaitError)):
		// The write ran; whether it is replicated is unknown or known to
		// be short. Sending it again would not tell.
		return fatal
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fatal
	case isRouteError(err):
		return notRun
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range notRunPrefixes {
			if strings.HasPrefix(msg, p) {
				return notRun
			}
		}
		return fatal
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" || errors.Is(err, syscall.ECONNREFUSED) {
		return notRun
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, new(net.Error)) {
		return uncertain
	}
	if strings.Contains(err.Error(), "pool timeout") {
		return notRun
	}
	return fatal
}

// routeError reports that no master could be found for a key: the cluster
// state is being reloaded or the cluster is down. Nothing was sent.
type routeError struct{ err error }

func (e *routeError) Error() string { return "redis: no master for the key: " + e.err.Error() }
func (e *routeError) Unwrap() error { return e.err }

func isRouteError(err error) bool { var r *routeError; return errors.As(err, &r) }

// WaitError reports a write that the master applied but fewer replicas than
// asked acknowledged in time: it is in the master's memory and AOF, and is
// lost if that master fails before a replica copies it.
type WaitError struct {
	Addr      string
	Got, Want int
	Err       error // WAIT itself failed; Got is then meaningless
}

func (e *WaitError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("redis %s: WAIT for %d replicas failed after the write was sent: %v", e.Addr, e.Want, e.Err)
	}
	return fmt.Sprintf("redis: %s acknowledged by %d of %d replicas in time; the write is on the master but may be lost if it fails over", e.Addr, e.Got, e.Want)
}

func (e *WaitError) Unwrap() error { return e.Err }

// nodeError names the node an error came from.
func nodeError(addr string, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	return fmt.Errorf("redis %s: %w", addr, err)
}
