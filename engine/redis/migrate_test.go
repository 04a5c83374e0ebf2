package redis

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// TestSlotMigration stops a hash slot half-way through a resharding, the
// way redis-cli --cluster reshard moves it: the slot is MIGRATING on its
// master and IMPORTING on another, and part of its keys (some records and
// the bucket's index sets) have been MIGRATEd. The source answers ASK for
// the keys that left. Reads, scans, writes of the records that left,
// CreateOnly and Checkpoint must all go on without waiting for the
// migration to end, which never comes here: the retry time is short, so
// that waiting fails the test instead of slowing it. A CAS whose keys are
// split between the two nodes cannot run anywhere until they are together
// again (TRYAGAIN): that one must be retried, and give up with TRYAGAIN as
// the cause, not fail at once. The slot is put back on its master when the
// test ends, failed or not.
func TestSlotMigration(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	wait := 0
	if everyMasterHasReplica(t) {
		wait = 1 // so that the redirected writes and Checkpoint go through WAIT
	}
	e := openAt(t, clusterAddrs, t.TempDir(), func(o *Options) {
		// One bucket per slot: the test's slot holds one bucket of this
		// namespace only, and none of the namespaces of other tests, which
		// use fewer buckets on slots that are multiples of 16.
		o.Buckets = slots
		o.Sync = engine.SyncAlways
		o.Wait = wait
		o.RetryTimeout = 2 * time.Second
	})
	defer e.Close()
	if e.cluster == nil {
		t.Skip("not a cluster")
	}
	m := newSlotMigration(t)
	if m.slot%16 == 0 {
		t.Logf("slot %d is also a bucket of namespaces with the default bucket count", m.slot)
	}

	// Records 0-5 will leave with the index sets, 6-11 stay behind; all on
	// the slot being migrated.
	key := func(i int) engine.Key {
		k := enginetest.K(uint64(i))
		binary.BigEndian.PutUint32(k[:4], uint32(i)<<14|uint32(m.slot))
		return k
	}
	const leaving, staying = 6, 6
	type record struct {
		value string
		terms engine.Terms
	}
	want := map[engine.Key]record{}
	put := func(i int, value string, base uint32) {
		t.Helper()
		terms := engine.Terms{UnminedSince: base + uint32(i), DeleteAtHeight: base + 100 + uint32(i), PreserveUntil: base + 200 + uint32(i)}
		errs, err := e.Update(ctx, []engine.Update{{Key: key(i), Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: []byte(value), Terms: terms}, nil
		}}})
		if err == nil {
			err = errs[0]
		}
		if err != nil {
			t.Fatalf("update of record %d: %v", i, err)
		}
		want[key(i)] = record{value, terms}
	}
	for i := 0; i < leaving+staying; i++ {
		put(i, fmt.Sprintf("v%d", i), 1000)
	}
	if b := e.lay.bucket(key(0)); b != m.slot {
		t.Fatalf("records in bucket %d, want %d", b, m.slot)
	}

	check := func(when string) {
		t.Helper()
		keys := slices.Collect(maps.Keys(want))
		keys = append(keys, key(99)) // never written
		got, err := e.Get(ctx, keys)
		if err != nil {
			t.Fatalf("%s: Get: %v", when, err)
		}
		for i, k := range keys {
			if w, ok := want[k]; !ok && got[i] != nil || ok && string(got[i]) != w.value {
				t.Errorf("%s: Get %x = %q, want %q", when, k[:4], got[i], w.value)
			}
		}
		for _, idx := range engine.Indexes {
			seen := map[engine.Key]uint32{}
			if err := e.Scan(ctx, idx, 1, 1<<31, func(k engine.Key, term uint32) error { seen[k] = term; return nil }); err != nil {
				t.Fatalf("%s: Scan %v: %v", when, idx, err)
			}
			expect := map[engine.Key]uint32{}
			for k, r := range want {
				if term := idx.Term(r.terms); term != 0 {
					expect[k] = term
				}
			}
			if !maps.Equal(seen, expect) {
				t.Errorf("%s: Scan %v found %v, want %v", when, idx, seen, expect)
			}
		}
		all := map[engine.Key]string{}
		if err := e.ForEach(ctx, func(k engine.Key, v []byte) error { all[k] = string(v); return nil }); err != nil {
			t.Fatalf("%s: ForEach: %v", when, err)
		}
		for k, r := range want {
			if all[k] != r.value {
				t.Errorf("%s: ForEach gave %q for %x, want %q", when, all[k], k[:4], r.value)
			}
		}
		if len(all) != len(want) {
			t.Errorf("%s: ForEach found %d records, want %d", when, len(all), len(want))
		}
	}
	check("before the migration")

	m.start(t)
	moving := make([]string, 0, leaving+len(engine.Indexes))
	for i := 0; i < leaving; i++ {
		moving = append(moving, e.lay.record(key(i)))
	}
	for _, idx := range engine.Indexes {
		moving = append(moving, e.lay.index(m.slot, idx))
	}
	m.move(t, moving)

	check("half-way through the migration")

	// The records that left live with their index sets on the importing
	// node: CAS writes reach them there.
	for i := 0; i < 3; i++ {
		put(i, fmt.Sprintf("v%d-updated", i), 5000)
	}
	if err := e.Delete(ctx, []engine.Key{key(3)}); err != nil {
		t.Fatalf("Delete of a record that left: %v", err)
	}
	delete(want, key(3))
	if err := e.CreateOnly(ctx, key(50), []byte("created"), 0); err != nil {
		t.Fatalf("CreateOnly of a new record in the migrating slot: %v", err)
	}
	want[key(50)] = record{value: "created"}
	if err := e.CreateOnly(ctx, key(50), []byte("again"), 0); !errors.Is(err, engine.ErrExists) {
		t.Fatalf("second CreateOnly of the same key: %v, want ErrExists", err)
	}
	check("after writes during the migration")

	// A record that stayed has its index sets on the other node: its CAS
	// is refused by both (TRYAGAIN) until the slot's keys are together.
	before := want[key(leaving)]
	errs, err := e.Update(ctx, []engine.Update{{Key: key(leaving), Fn: func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: []byte("split")}, nil
	}}})
	if err == nil && errs[0] == nil {
		t.Fatalf("Update of a record apart from its index sets succeeded during the migration")
	}
	if !redis.IsTryAgainError(err) || !strings.Contains(err.Error(), "gave up after") {
		t.Fatalf("Update of a record apart from its index sets: %v (errs %v), want a retried TRYAGAIN", err, errs)
	}
	if got, err := e.Get(ctx, []engine.Key{key(leaving)}); err != nil || string(got[0]) != before.value {
		t.Fatalf("record after a refused Update: %q, %v; want %q", got, err, before.value)
	}

	if wait > 0 {
		// The source's first bucket is the migrating slot, whose marker is
		// not on the source: Checkpoint must still write and WAIT on it.
		const height = 777
		if err := e.Checkpoint(ctx, height); err != nil {
			t.Fatalf("Checkpoint during the migration: %v", err)
		}
		if !m.srcHasMarker(t, e, height) {
			t.Fatalf("Checkpoint wrote no marker on %s, whose slot %d is migrating: its WAIT covered nothing", m.srcAddr, m.slot)
		}
	}
	check("at the end")
}

// slotMigration is a hash slot of the test cluster and the two masters it
// migrates between.
type slotMigration struct {
	slot             int
	src, dst         *redis.Client
	srcID, dstID     string
	srcAddr, dstAddr string
	masters          []*redis.Client
}

// newSlotMigration picks the lowest slot of a master other than slot 0's,
// to move to slot 0's master. Being its master's first slot, it is where
// Checkpoint puts that master's marker first.
func newSlotMigration(t *testing.T) *slotMigration {
	t.Helper()
	ctx := context.Background()
	seed := redis.NewClient(&redis.Options{Addr: clusterAddrs[0]})
	defer seed.Close()
	shards, err := seed.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	lowest := map[string]int{}
	addrs := map[string]string{}
	var zero string
	for _, s := range shards {
		i := slices.IndexFunc(s.Nodes, func(n redis.Node) bool { return n.Role == "master" })
		if i < 0 {
			continue
		}
		n := s.Nodes[i]
		addrs[n.ID] = net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
		for _, r := range s.Slots {
			if l, ok := lowest[n.ID]; !ok || int(r.Start) < l {
				lowest[n.ID] = int(r.Start)
			}
			if r.Start == 0 {
				zero = n.ID
			}
		}
	}
	if len(lowest) < 2 {
		t.Skip("a slot migration needs two masters")
	}
	m := &slotMigration{slot: slots, dstID: zero, dstAddr: addrs[zero]}
	for id, s := range lowest {
		if id != zero && s < m.slot {
			m.slot, m.srcID, m.srcAddr = s, id, addrs[id]
		}
	}
	for id, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		m.masters = append(m.masters, c)
		switch id {
		case m.srcID:
			m.src = c
		case m.dstID:
			m.dst = c
		}
	}
	t.Cleanup(func() {
		for _, c := range m.masters {
			c.Close()
		}
	})
	t.Logf("migrating slot %d from %s to %s", m.slot, m.srcAddr, m.dstAddr)
	return m
}

// start opens the migration: IMPORTING on the destination first, then
// MIGRATING on the source, as redis-cli does.
func (m *slotMigration) start(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { m.rollBack(t) })
	if err := m.dst.Do(ctx, "cluster", "setslot", m.slot, "importing", m.srcID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := m.src.Do(ctx, "cluster", "setslot", m.slot, "migrating", m.dstID).Err(); err != nil {
		t.Fatal(err)
	}
}

// move MIGRATEs keys from the source to the destination.
func (m *slotMigration) move(t *testing.T, keys []string) {
	t.Helper()
	if err := migrate(m.src, m.dstAddr, keys); err != nil {
		t.Fatalf("MIGRATE to %s: %v", m.dstAddr, err)
	}
	n, err := m.dst.ClusterCountKeysInSlot(context.Background(), m.slot).Result()
	if err != nil || n != int64(len(keys)) {
		t.Fatalf("%s holds %d keys of slot %d after MIGRATE (%v), want %d", m.dstAddr, n, m.slot, err, len(keys))
	}
}

func migrate(from *redis.Client, to string, keys []string) error {
	host, port, err := net.SplitHostPort(to)
	if err != nil {
		return err
	}
	args := []any{"migrate", host, port, "", 0, 5000, "keys"}
	for _, k := range keys {
		args = append(args, k)
	}
	return from.Do(context.Background(), args...).Err()
}

// rollBack puts the slot back on the source, as it was: the source leaves
// MIGRATING (it owns the slot, so it serves every key of it again); the
// destination, still IMPORTING and so allowed to MIGRATE keys of a slot it
// does not own, sends every key it holds of it back; it leaves IMPORTING;
// and every master is told the slot's owner. Then every node must report
// the cluster ok and no slot open.
func (m *slotMigration) rollBack(t *testing.T) {
	ctx := context.Background()
	fail := func(what string, err error) {
		if err != nil {
			t.Errorf("putting slot %d back on %s: %s: %v", m.slot, m.srcAddr, what, err)
		}
	}
	fail("SETSLOT STABLE on the source", m.src.Do(ctx, "cluster", "setslot", m.slot, "stable").Err())
	for {
		keys, err := m.dst.ClusterGetKeysInSlot(ctx, m.slot, 1000).Result()
		if err != nil || len(keys) == 0 {
			fail("GETKEYSINSLOT on the destination", err)
			break
		}
		if err := migrate(m.dst, m.srcAddr, keys); err != nil {
			fail("MIGRATE back", err)
			break
		}
	}
	fail("SETSLOT STABLE on the destination", m.dst.Do(ctx, "cluster", "setslot", m.slot, "stable").Err())
	for _, c := range m.masters {
		fail("SETSLOT NODE on "+c.Options().Addr, c.Do(ctx, "cluster", "setslot", m.slot, "node", m.srcID).Err())
	}
	for _, addr := range clusterAddrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		info, err := c.ClusterInfo(ctx).Result()
		fail("CLUSTER INFO on "+addr, err)
		if err == nil && !strings.Contains(info, "cluster_state:ok") {
			t.Errorf("%s: cluster state not ok after the slot went back:\n%s", addr, info)
		}
		nodes, err := c.ClusterNodes(ctx).Result()
		fail("CLUSTER NODES on "+addr, err)
		for _, line := range strings.Split(nodes, "\n") {
			if strings.Contains(line, "myself") && strings.Contains(line, "[") {
				t.Errorf("%s: a slot is still open: %s", addr, line)
			}
		}
		c.Close()
	}
	if n, err := m.dst.ClusterCountKeysInSlot(ctx, m.slot).Result(); err != nil || n != 0 {
		t.Errorf("%s still holds %d keys of slot %d (%v)", m.dstAddr, n, m.slot, err)
	}
}

// srcHasMarker reports whether one of e's checkpoint markers on the source
// holds height.
func (m *slotMigration) srcHasMarker(t *testing.T, e *Engine, height int) bool {
	ctx := context.Background()
	iter := m.src.Scan(ctx, 0, e.lay.ns+":{*}c", 1000).Iterator()
	for iter.Next(ctx) {
		if v, err := m.src.Get(ctx, iter.Val()).Int(); err == nil && v == height {
			return true
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}

// everyMasterHasReplica reports whether every master has a replica online,
// which Wait = 1 needs.
func everyMasterHasReplica(t *testing.T) bool {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs})
	defer c.Close()
	var short atomic.Bool
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		info, err := m.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if infoInt(info, "connected_slaves") < 1 || !strings.Contains(info, "state=online") {
			short.Store(true)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return !short.Load()
}
