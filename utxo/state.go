package utxo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/utxostore/utxostore/engine"
)

// FormatVersion is the version of the record and metadata layout. A store
// written with another version is refused rather than misread.
const FormatVersion = 4

// The states of the dbState field, as Blockbook names them.
const (
	dbStateClosed       = "closed"
	dbStateOpen         = "open"
	dbStateInconsistent = "inconsistent"
)

// metaInternalState is the metadata key of the internal state.
const metaInternalState = "internalState"

// internalState is kept in the engine's metadata and checked on every open,
// the way Blockbook keeps its internal state: a store is never used by the
// wrong network, format or engine, and an unclean shutdown is noticed.
type internalState struct {
	Format  int    `json:"format"`
	Network string `json:"network"`
	Engine  string `json:"engine"`
	DBState string `json:"dbState"`
}

// StateError explains why a store refused to open.
type StateError struct {
	Field string // "format", "network", "engine" or "dbState"
	Found string
	Want  string
	Hint  string
}

func (e *StateError) Error() string {
	return fmt.Sprintf("store refused to open: its %s is %q where this run expects %q; %s", e.Field, e.Found, e.Want, e.Hint)
}

// ErrNoStore is a read-only Open's refusal of an engine that holds no
// store: it has no internal state.
var ErrNoStore = errors.New("utxo: the engine holds no store (it has no internal state)")

// checkInternalState verifies the stored state against this store and,
// unless readOnly, marks it open. It returns whether the previous run
// ended without a clean close.
func checkInternalState(ctx context.Context, eng engine.Engine, network string, readOnly bool) (uncleanShutdown bool, err error) {
	raw, err := eng.GetMeta(ctx, metaInternalState)
	if err != nil {
		return false, fmt.Errorf("reading the internal state: %w", err)
	}
	if raw == nil && readOnly {
		return false, ErrNoStore
	}
	state := internalState{Format: FormatVersion, Network: network, Engine: eng.Name(), DBState: dbStateClosed}
	if raw != nil {
		var found internalState
		if err := json.Unmarshal(raw, &found); err != nil {
			return false, &StateError{Field: "internal state", Found: string(raw), Want: "valid JSON",
				Hint: "the store's metadata is damaged; restore it from a backup or re-import into a new data directory"}
		}
		switch {
		case found.Format != FormatVersion:
			return false, &StateError{Field: "format", Found: fmt.Sprint(found.Format), Want: fmt.Sprint(FormatVersion),
				Hint: "it was written by another version of utxostore: use that version, or re-import into a new data directory"}
		case found.Network != network:
			return false, &StateError{Field: "network", Found: found.Network, Want: network,
				Hint: "pass --network " + found.Network + " or choose another data directory"}
		case found.Engine != eng.Name():
			return false, &StateError{Field: "engine", Found: found.Engine, Want: eng.Name(),
				Hint: "open it with --engine " + found.Engine}
		case found.DBState == dbStateInconsistent:
			return false, &StateError{Field: "dbState", Found: found.DBState, Want: dbStateClosed,
				Hint: "a previous run left it inconsistent; re-import into a new data directory"}
		}
		uncleanShutdown = found.DBState == dbStateOpen
	}
	if readOnly {
		return uncleanShutdown, nil
	}
	state.DBState = dbStateOpen
	return uncleanShutdown, putInternalState(ctx, eng, state)
}

func putInternalState(ctx context.Context, eng engine.Engine, s internalState) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return eng.PutMeta(ctx, metaInternalState, raw)
}

// markClosed records a clean shutdown.
func markClosed(ctx context.Context, eng engine.Engine, network string) error {
	return putInternalState(ctx, eng, internalState{Format: FormatVersion, Network: network, Engine: eng.Name(), DBState: dbStateClosed})
}
