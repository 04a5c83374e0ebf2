// Package httpreply is how the daemon's HTTP handlers answer, its own
// (health, refusals) and the Blockbook API's alike: JSON bodies, errors in
// Blockbook's {"error": "..."} shape, and the note a handler leaves on its
// answer for the daemon's log of server faults.
package httpreply

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// JSON answers v, indented, with code.
func JSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Error answers in Blockbook's error shape: {"error": "..."}.
func Error(w http.ResponseWriter, code int, format string, args ...any) {
	JSON(w, code, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// note is what a handler says of its answer to the daemon's fault log.
type note struct{ configured bool }

type noteKey struct{}

// WithNote gives a request's context the note its handler may mark
// (MarkConfigured) and the fault log reads (Configured). The daemon gives
// every request one, above the handlers, so that the note outlives the
// requests they derive.
func WithNote(ctx context.Context) context.Context {
	return context.WithValue(ctx, noteKey{}, new(note))
}

// MarkConfigured marks r's 5xx answer as what the daemon was configured
// to answer (estimatefee or sendtx without a node), not a fault.
func MarkConfigured(r *http.Request) {
	if n, ok := r.Context().Value(noteKey{}).(*note); ok {
		n.configured = true
	}
}

// Configured reports whether r's handler marked its answer with
// MarkConfigured.
func Configured(r *http.Request) bool {
	n, ok := r.Context().Value(noteKey{}).(*note)
	return ok && n.configured
}
