// Package testlog gives tests a *slog.Logger whose lines go to the test's
// own log, so they show with the test that wrote them (and with -v).
package testlog

import (
	"log/slog"
	"strings"
	"testing"
)

// Logger returns a text logger writing to t.Log.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(writer{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type writer struct{ t testing.TB }

func (w writer) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
