package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
)

// Name is the engine's registered name.
const Name = "redis"

var errClosed = engine.ErrClosed

// Engine is a utxostore engine on a Redis Cluster or a single Redis server.
type Engine struct {
	opt     Options
	client  redis.UniversalClient
	cluster *redis.ClusterClient // nil on a single server
	single  *redis.Client        // nil on a cluster
	lay     *layout
	recent  *recent
	closed  atomic.Bool
	// made is set when this Open made the namespace (see MadeNamespace).
	made bool

	askMu      sync.Mutex
	askClients map[string]*redis.Client // by address: the nodes ASK replies named

	// deferred counts the writes that skipped their WAIT (engine.DeferSync);
	// covered is how many of them a wait on every master has covered since.
	deferred, covered atomic.Uint64
}

var _ engine.Engine = (*Engine)(nil)

// Open connects to the servers, checks that every master answers, and opens
// (or makes) the namespace; with Options.ReadOnly it opens an existing
// namespace and writes nothing.
func Open(ctx context.Context, opt Options) (*Engine, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Engine{opt: opt, recent: newRecent(opt.RecentRecords)}
	if err := e.connect(ctx); err != nil {
		return nil, err
	}
	if err := e.openLayout(ctx); err != nil {
		e.client.Close()
		return nil, err
	}
	if err := e.loadScript(ctx); err != nil {
		e.client.Close()
		return nil, err
	}
	return e, nil
}

// connect makes a cluster client for several addresses or a cluster node,
// and a plain client for one server with cluster mode off.
func (e *Engine) connect(ctx context.Context) error {
	o := e.opt
	if len(o.Addrs) == 1 {
		c := redis.NewClient(e.nodeOptions(o.Addrs[0]))
		info, err := c.Info(ctx, "cluster").Result()
		if err != nil {
			c.Close()
			return fmt.Errorf("redis: cannot reach %s: %w", o.Addrs[0], err)
		}
		if !strings.Contains(info, "cluster_enabled:1") {
			e.client, e.single = c, c
			return nil
		}
		c.Close()
	}
	// Retries are ours (see Update): go-redis must not send a CAS twice
	// behind our back.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: o.Addrs, Username: o.Username, Password: o.Password,
		MaxRetries: -1, ContextTimeoutEnabled: true, ReadTimeout: e.readTimeout()})
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return nodeError(c.Options().Addr, c.Ping(ctx).Err())
	})
	if err != nil {
		cc.Close()
		return fmt.Errorf("redis: cluster at %s: %w", strings.Join(o.Addrs, ","), err)
	}
	e.client, e.cluster = cc, cc
	return nil
}

// nodeOptions configures a client of one server as connect configures the
// cluster client: no retries by go-redis, a read timeout that outlasts WAIT.
func (e *Engine) nodeOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, Username: e.opt.Username, Password: e.opt.Password,
		MaxRetries: -1, ContextTimeoutEnabled: true, ReadTimeout: e.readTimeout()}
}

// readTimeout outlasts a pipelined WAIT, which blocks for up to WaitTimeout.
func (e *Engine) readTimeout() time.Duration {
	return max(3*time.Second, e.opt.WaitTimeout+time.Second)
}

// Name implements engine.Engine.
func (e *Engine) Name() string { return Name }

// Close implements engine.Engine. The data stays in Redis.
func (e *Engine) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return errClosed
	}
	e.askMu.Lock()
	defer e.askMu.Unlock()
	for _, c := range e.askClients {
		c.Close()
	}
	return e.client.Close()
}

// writable admits a call that writes: not after Close, nor on an engine
// opened read-only.
func (e *Engine) writable() error {
	switch {
	case e.closed.Load():
		return errClosed
	case e.opt.ReadOnly:
		return engine.ErrReadOnly
	}
	return nil
}

// check maps errors seen after Close to ErrClosed.
func (e *Engine) check(err error) error {
	if err != nil && e.closed.Load() && !errors.Is(err, errClosed) {
		return fmt.Errorf("%w (%v)", errClosed, err)
	}
	return err
}
