package redis

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// The checksum and the tag table must agree with the servers' own
// CLUSTER KEYSLOT, or a record and its index entries would straddle slots
// and every CAS would fail with CROSSSLOT.
func TestSlotsAgreeWithServer(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: clusterAddrs[0]})
	defer c.Close()
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16 check value %#x, want 0x31c3", got)
	}
	tags := slotTags()
	l := newLayout("ns", defaultBuckets)
	for _, s := range []int{0, 1, 5460, 5461, 12182, 16383} {
		got, err := c.ClusterKeySlot(ctx, "x{"+tags[s]+"}y").Result()
		if err != nil {
			t.Fatal(err)
		}
		if int(got) != s {
			t.Fatalf("tag %q: server puts it on slot %d, we meant %d", tags[s], got, s)
		}
	}
	for i := uint64(0); i < 64; i++ {
		k := enginetest.K(i)
		rec, err := c.ClusterKeySlot(ctx, l.record(k)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, ik := range l.indexesOf(k) {
			if s, _ := c.ClusterKeySlot(ctx, ik).Result(); s != rec {
				t.Fatalf("key %d: record on slot %d, index %q on %d", i, rec, ik, s)
			}
		}
		if want := int64(l.bucket(k) * (slots / defaultBuckets)); rec != want {
			t.Fatalf("key %d: slot %d, want bucket's slot %d", i, rec, want)
		}
	}
}

func TestOpenNamesUnreachableAddress(t *testing.T) {
	_, err := Open(context.Background(), Options{Addrs: []string{"127.0.0.1:1"}, Namespace: "x"})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Open of a dead address: %v, want an error naming it", err)
	}
	_, err = Open(context.Background(), Options{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}, Namespace: "x"})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Open of a dead cluster: %v, want an error naming it", err)
	}
}

func TestNamespaceIsChecked(t *testing.T) {
	for _, ns := range []string{"", "a{b}", "a*", "a b"} {
		if _, err := Open(context.Background(), Options{Addrs: []string{"127.0.0.1:1"}, Namespace: ns}); err == nil {
			t.Errorf("namespace %q accepted", ns)
		}
	}
}
