package redis

import (
	"errors"
	"fmt"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/setting"
)

// Options configures Open.
type Options struct {
	// Addrs are the seed addresses: several for a Redis Cluster, or one,
	// which may be a cluster node (detected) or a plain server.
	Addrs []string
	// Namespace prefixes every key, so several stores and test runs can
	// share a cluster. Letters, digits and "-_.:/" only: it appears in a
	// SCAN pattern and must not contain a hash tag.
	Namespace string
	// Buckets is the number of index buckets of a new namespace: a power of
	// two from 1 to 16384, default 1024. More buckets spread records over
	// more slots; fewer make Scan cheaper (one command per bucket). An
	// existing namespace keeps the count it was made with.
	Buckets int
	// Sync chooses when WAIT runs: with SyncAlways every write batch ends
	// with WAIT on each master it touched (in the same pipeline, so no extra
	// round trip); with SyncBlock only Checkpoint waits. Without Wait
	// neither waits. See the package documentation for what each can lose.
	Sync engine.SyncMode
	// Wait is the number of replicas that must acknowledge writes, 0 for
	// none (the default: rely on the master's AOF).
	Wait int
	// WaitTimeout bounds each WAIT (default 2 s). Fewer acknowledgements
	// than Wait within it is an error.
	WaitTimeout time.Duration
	// RetryTimeout is how long an operation keeps retrying through
	// redirects, a failover, lost connections or a slot migration that
	// splits a CAS's keys (TRYAGAIN) before it fails (default 30 s).
	RetryTimeout time.Duration
	// RecentRecords is how many records the engine remembers as its
	// Updates last read or wrote them (default 65,536; negative for none),
	// so that an Update of one of them, or one creating a record, is one
	// round trip per master instead of two (see Update). Each costs its
	// stored size in memory; the least recently used is forgotten first.
	RecentRecords int
	// Username and Password authenticate, when the servers require it.
	Username, Password string
	// ReadOnly opens an existing namespace and writes nothing to Redis:
	// a namespace never made (no layout key) is refused with a
	// *NoNamespaceError rather than made, and every write returns
	// engine.ErrReadOnly.
	ReadOnly bool
}

const (
	defaultBuckets      = 1024
	defaultWaitTimeout  = 2 * time.Second
	defaultRetryTimeout = 30 * time.Second
	defaultRecent       = 1 << 16
)

func (o Options) withDefaults() (Options, error) {
	if len(o.Addrs) == 0 {
		return o, errors.New("redis: no addresses given")
	}
	if o.Namespace == "" {
		return o, errors.New("redis: empty namespace")
	}
	for _, c := range o.Namespace {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' || c == '/'
		if !ok {
			return o, fmt.Errorf("redis: namespace %q: only letters, digits and -_.:/ are allowed", o.Namespace)
		}
	}
	if o.Buckets != 0 && (o.Buckets < 1 || o.Buckets > slots || o.Buckets&(o.Buckets-1) != 0) {
		return o, fmt.Errorf("redis: %d buckets: want a power of two from 1 to %d", o.Buckets, slots)
	}
	if o.Wait < 0 {
		return o, fmt.Errorf("redis: wait for %d replicas", o.Wait)
	}
	setting.Default(&o.WaitTimeout, defaultWaitTimeout)
	setting.Default(&o.RetryTimeout, defaultRetryTimeout)
	if o.RecentRecords < 0 { // none remembered
		o.RecentRecords = 0
	} else {
		setting.Default(&o.RecentRecords, defaultRecent)
	}
	return o, nil
}
