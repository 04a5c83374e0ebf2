package utxo

import "testing"

// StoreOpeners returns, for the memory engine and every persistent engine
// the store's tests run on, an opener of fresh stores for the conformance
// suite of package utxo/storetest.
func StoreOpeners(t *testing.T) map[string]func(testing.TB, Options) Store {
	engines := persistentEngines(t)
	engines["memory"] = onMemory
	openers := map[string]func(testing.TB, Options) Store{}
	for name, eng := range engines {
		openers[name] = func(t testing.TB, opts Options) Store { return newStoreOn(t, eng, opts) }
	}
	return openers
}
