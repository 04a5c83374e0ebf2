// Package record is the single implementation of the UTXO record model: the
// byte codecs every engine stores opaquely, and the state machine (spend,
// unspend, set-mined, lock, freeze, reassign, conflicting, preserve and the
// delete-at-height rule) that the utxo package applies inside an engine's
// atomic read-modify-write callback:
//
//	rec, err := record.Decode(current)
//	if err != nil { ... }
//	sig, err := rec.Spend(offset, utxoHash, spendingData, opts)
//	if err != nil { return current, err } // rec is unchanged on error
//	return rec.Encode(), rec.Terms(), sig
//
// The package is pure: no I/O, no goroutines, no clocks. Every operation is a
// method on *Record that mutates the record, returns the Signal set the
// caller must act on (propagate to the master or the child records, to the
// external blob store) and a typed *Error. A failed operation leaves the
// record exactly as it was, so the caller can simply keep the old bytes.
//
// One transaction is stored as one master record (Index 0) holding the first
// batch of outputs plus all transaction metadata, and, when it has more than
// the batch size of outputs, child records (Index 1..N-1) holding the later
// batches plus the common metadata. See Build, keys.go and pagination.go.
package record
