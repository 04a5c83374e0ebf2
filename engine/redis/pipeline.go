package redis

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// masterFor returns the client of the master serving key's slot.
func (e *Engine) masterFor(ctx context.Context, key string) (*redis.Client, error) {
	if e.cluster == nil {
		return e.single, nil
	}
	c, err := e.cluster.MasterForKey(ctx, key)
	if err != nil {
		return nil, &routeError{err}
	}
	return c, nil
}

// fanOut sends one command per key, grouped into one pipeline per master,
// to every master at once: a batch costs one round trip per shard however
// many keys it has. add appends key i's command. With wait each pipeline
// ends with WAIT, on the same connection as its writes, which is what WAIT
// needs. errs[i] is key i's error, named by node; a WAIT shortfall is a
// *WaitError on every key of that node.
func (e *Engine) fanOut(ctx context.Context, keys []string, add func(p redis.Pipeliner, i int) redis.Cmder, wait bool) (cmds []redis.Cmder, errs []error) {
	cmds = make([]redis.Cmder, len(keys))
	errs = make([]error, len(keys))
	groups := make(map[*redis.Client][]int)
	var order []*redis.Client
	for i, k := range keys {
		c, err := e.masterFor(ctx, k)
		if err != nil {
			errs[i] = err
			continue
		}
		if _, ok := groups[c]; !ok {
			order = append(order, c)
		}
		groups[c] = append(groups[c], i)
	}
	var wg sync.WaitGroup
	for _, c := range order {
		wg.Add(1)
		go func(c *redis.Client, idx []int) {
			defer wg.Done()
			e.sendTo(ctx, c, idx, cmds, errs, add, wait)
		}(c, groups[c])
	}
	wg.Wait()
	return cmds, errs
}

func (e *Engine) sendTo(ctx context.Context, c *redis.Client, idx []int, cmds []redis.Cmder, errs []error, add func(redis.Pipeliner, int) redis.Cmder, wait bool) {
	addr := c.Options().Addr
	p := c.Pipeline()
	for _, i := range idx {
		cmds[i] = add(p, i)
	}
	var w *redis.Cmd
	if wait && e.opt.Wait > 0 {
		// Pipeliner has no Wait method; the clients' read timeout is set
		// above WaitTimeout in connect.
		w = p.Do(ctx, "wait", e.opt.Wait, e.opt.WaitTimeout.Milliseconds())
	}
	_, _ = p.Exec(ctx) // errors are per command
	var waitErr error
	if w != nil {
		if got, err := w.Int(); err != nil {
			waitErr = &WaitError{Addr: addr, Want: e.opt.Wait, Err: err}
		} else if got < e.opt.Wait {
			waitErr = &WaitError{Addr: addr, Got: got, Want: e.opt.Wait}
		}
	}
	for _, i := range idx {
		errs[i] = nodeError(addr, cmds[i].Err())
		if errs[i] == nil && waitErr != nil {
			errs[i] = waitErr
		}
	}
}
