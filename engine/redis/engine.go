package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	closed  atomic.Bool
}

var _ engine.Engine = (*Engine)(nil)

// Open connects to the servers, checks that every master answers, and opens
// (or makes) the namespace.
func Open(ctx context.Context, opt Options) (*Engine, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Engine{opt: opt}
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
	// A pipelined WAIT blocks for up to WaitTimeout; the read must outlast it.
	readTimeout := max(3*time.Second, o.WaitTimeout+time.Second)
	if len(o.Addrs) == 1 {
		c := redis.NewClient(&redis.Options{Addr: o.Addrs[0], Username: o.Username, Password: o.Password,
			MaxRetries: -1, ContextTimeoutEnabled: true, ReadTimeout: readTimeout})
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
		MaxRetries: -1, ContextTimeoutEnabled: true, ReadTimeout: readTimeout})
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

// Name implements engine.Engine.
func (e *Engine) Name() string { return Name }

// Close implements engine.Engine. The data stays in Redis.
func (e *Engine) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return errClosed
	}
	return e.client.Close()
}

// check maps errors seen after Close to ErrClosed.
func (e *Engine) check(err error) error {
	if err != nil && e.closed.Load() && !errors.Is(err, errClosed) {
		return fmt.Errorf("%w (%v)", errClosed, err)
	}
	return err
}
