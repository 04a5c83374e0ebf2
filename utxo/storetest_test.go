package utxo_test

import (
	"testing"

	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/storetest"
)

// TestStoreConformance runs the Store interface's conformance suite on the
// store itself, over every engine; package server runs it once more
// through the daemon.
func TestStoreConformance(t *testing.T) {
	for name, open := range utxo.StoreOpeners(t) {
		t.Run(name, func(t *testing.T) { storetest.Run(t, open) })
	}
}
