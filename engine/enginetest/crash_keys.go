package enginetest

import "github.com/utxostore/utxostore/engine"

// crashKeys is the crash stream's key space: K(0) .. K(n-1).
func crashKeys(n int) []engine.Key {
	keys := make([]engine.Key, n)
	for i := range keys {
		keys[i] = K(uint64(i))
	}
	return keys
}
