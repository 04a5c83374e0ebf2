package utxo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/engine/redis"
	"github.com/utxostore/utxostore/engine/sozu"
)

// persistentEngines are the engines the store's own tests also run on: the
// rules live in the record layer, but every engine must carry them out
// (atomic updates, create-only lock records with a time to live, indexes).
// Redis runs when a cluster is configured (scripts/test.sh starts one).
func persistentEngines(t *testing.T) map[string]engineOpener {
	engines := map[string]engineOpener{
		"pebble": func(t testing.TB) engine.Engine {
			e, err := pebble.Open(filepath.Join(t.TempDir(), "pebble"), pebble.Options{Sync: engine.SyncBlock})
			if err != nil {
				t.Fatal(err)
			}
			return e
		},
		"sozu": func(t testing.TB) engine.Engine {
			e, err := sozu.Open(filepath.Join(t.TempDir(), "sozu"), sozu.Options{Sync: engine.SyncBlock})
			if err != nil {
				t.Fatal(err)
			}
			return e
		},
	}
	addrs := os.Getenv("UTXOSTORE_REDIS_ADDRS")
	if addrs == "" {
		t.Log("UTXOSTORE_REDIS_ADDRS is not set: the store's tests do not run on redis (scripts/test.sh starts a cluster and sets it)")
		return engines
	}
	engines["redis"] = func(t testing.TB) engine.Engine {
		opts := redis.Options{Addrs: strings.Split(addrs, ","), Namespace: fmt.Sprintf("utxo-test-%d-%d", os.Getpid(), redisNamespaces.Add(1))}
		t.Cleanup(func() {
			if err := redis.Drop(ctx, opts); err != nil {
				t.Errorf("removing the test's namespace %q: %v", opts.Namespace, err)
			}
		})
		e, err := redis.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	return engines
}

// redisNamespaces numbers the Redis namespaces this test process opens, so
// that every store starts empty however many tests (and -count rounds)
// open one.
var redisNamespaces atomic.Int64

// TestStoreOnEveryEngine runs the store's tests of large transactions (the
// lock record pattern, with faults between its phases), reorganisations,
// conflicts, pruning and the reference behaviours that lean on the
// engines' indexes and atomic updates on every persistent engine. The
// outcomes of the Store interface's operations (spends, freezes, options)
// are the conformance suite's, run on every engine by TestStoreConformance.
func TestStoreOnEveryEngine(t *testing.T) {
	tests := []struct {
		name string
		fn   func(*testing.T, engineOpener)
	}{
		{"PaginationOfFortyFiveThousandOutputs", testPaginationOfFortyFiveThousandOutputs},
		{"CreateFaultInjection", testCreateFaultInjection},
		{"SetMinedCompletesAnInterruptedCreate", testSetMinedCompletesAnInterruptedCreate},
		{"ConcurrentCreateGetsTxExists", testConcurrentCreateGetsTxExists},
		{"AbandonedLockExpires", testAbandonedLockExpires},
		{"DAHRemovesEveryRecordAndTheBlobOnly", testDAHRemovesEveryRecordAndTheBlobOnly},
		{"BlockMakesUnminedDoubleSpenderConflicting", testBlockMakesUnminedDoubleSpenderConflicting},
		{"ABlockMiningAConflictingTransactionAndItsDescendants", testABlockMiningAConflictingTransactionAndItsDescendants},
		{"ReorgToCompetingBranchesAndBack", testReorgToCompetingBranchesAndBack},
		{"UnminedLifecycle", testUnminedLifecycle},
		// Where the store follows the reference (parity_test.go).
		{"ReassignedOutputIsHeldThroughItsSpendableInHeight", testReassignedOutputIsHeldThroughItsSpendableInHeight},
		{"CreateConflictingRecordsItAmongItsParentsConflictingChildren", testCreateConflictingRecordsItAmongItsParentsConflictingChildren},
		{"RespendByADeletedChildIsInvalidSpend", testRespendByADeletedChildIsInvalidSpend},
		{"DeleteAtHeightNeedsBlocksNotTheLongestChain", testDeleteAtHeightNeedsBlocksNotTheLongestChain},
		{"UnminedIteratorSkipsConflictingTransactions", testUnminedIteratorSkipsConflictingTransactions},
		{"UnsetMinedOfAMissingTransactionSucceeds", testUnsetMinedOfAMissingTransactionSucceeds},
		{"CounterConflictingAndConflictingChildrenIncludeDescendants", testCounterConflictingAndConflictingChildrenIncludeDescendants},
		{"GetSpendLockedAndConflictingTakePrecedence", testGetSpendLockedAndConflictingTakePrecedence},
	}
	for name, open := range persistentEngines(t) {
		t.Run(name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
			}
		})
	}
}
