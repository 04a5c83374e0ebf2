package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/record"
)

// TestVerifyNamesChainSpendsGoneUnlisted: in a copy of the imported
// mainnet store, a record whose output a pruned transaction of the chain
// spent forgets that transaction among its deleted children, as a lost
// write would leave it. The set's statistics still count the output spent,
// so they agree with a walk of the set; verify names the output and its
// spender all the same, and says that a block spending it again would be
// taken.
func TestVerifyNamesChainSpendsGoneUnlisted(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(data, os.DirFS(importedStore(t))); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run(t, "verify", "--data", data); err != nil {
		t.Fatalf("verify of the imported store: %v\n%s", err, stderr)
	}

	ctx := context.Background()
	sf := storeFlags{data: data}
	store, err := sf.open(ctx, existingStore)
	if err != nil {
		t.Fatal(err)
	}
	var key engine.Key
	var want string // "output by spender:vin"
	found := errors.New("found")
	err = store.Engine().ForEach(ctx, func(k engine.Key, v []byte) error {
		r, err := record.Decode(v)
		if err != nil {
			return nil // a lock record
		}
		for offset, e := range r.Utxos {
			if sd, spent := e.SpendingData(); spent && slices.Contains(r.DeletedChildren, sd.TxID) {
				key = k
				want = fmt.Sprintf("%s:%d by %s:%d", r.TxID, r.FirstVout+uint32(offset), sd.TxID, sd.Vin)
				return found
			}
		}
		return nil
	})
	if !errors.Is(err, found) {
		t.Fatalf("no record of the imported store has an output spent by a pruned transaction: %v", err)
	}
	_, err = store.Engine().Update(ctx, []engine.Update{{Key: key, Fn: func(current []byte) (engine.Mutation, error) {
		r, err := record.Decode(current)
		if err != nil {
			return engine.Mutation{}, err
		}
		r.DeletedChildren = nil
		return engine.Mutation{Action: engine.Put, Value: r.Encode(), Terms: r.Terms()}, nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	_, stderr, err := run(t, "verify", "--data", data)
	if err == nil || !strings.Contains(stderr, "outputs of the set are spent by transactions of the chain that the store no longer holds") ||
		!strings.Contains(stderr, want) || !strings.Contains(stderr, "a block spending one of them again, a double spend") {
		t.Fatalf("verify of a store that lost a deleted child: %v, want %s named\n%s", err, want, stderr)
	}
}
