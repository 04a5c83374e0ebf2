package utxo

import (
	"context"
	"testing"
)

// Changes moves with every write, whatever made it, and stays while the
// store is only read.
func TestChangesCountWritesNotReads(t *testing.T) {
	ctx := context.Background()
	db := newStore(t, Options{})
	tx := coinbaseTx("changes", 2, 50)
	start := db.Changes()
	if _, err := db.Create(ctx, tx, 1); err != nil {
		t.Fatal(err)
	}
	afterCreate := db.Changes()
	if afterCreate == start {
		t.Fatal("Create did not count as a change")
	}
	if _, err := db.Get(ctx, tx.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Summary(ctx); err != nil {
		t.Fatal(err)
	}
	if db.Changes() != afterCreate {
		t.Fatal("reads counted as changes")
	}
	if err := db.Delete(ctx, tx.ID); err != nil {
		t.Fatal(err)
	}
	if db.Changes() == afterCreate {
		t.Fatal("Delete did not count as a change")
	}
}
