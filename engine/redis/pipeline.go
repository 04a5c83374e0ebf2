package redis

import (
	"context"
	"slices"
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

// batch is one fanOut's commands, one per key, and what came back for each,
// by key index. Each node's goroutine writes only its own keys' entries.
type batch struct {
	add func(p redis.Pipeliner, i int) redis.Cmder // appends key i's command
	// waitFor says whether key i's command is a write that a WAIT must
	// cover: a node's pipeline that holds one ends with WAIT.
	waitFor func(i int) bool
	cmds    []redis.Cmder
	errs    []error
	// asked[i]: key i's answer came from the node an ASK reply named, not
	// from the node it was first sent to.
	asked []bool
}

// fanOut sends one command per key, grouped into one pipeline per master,
// to every master at once: a batch costs one round trip per shard however
// many keys it has. add appends key i's command. With wait each pipeline
// ends with WAIT, on the same connection as its writes, which is what WAIT
// needs. errs[i] is key i's error, named by node; a WAIT shortfall is a
// *WaitError on every key of that node. ASK redirects are followed (see
// sendTo), and asked says which keys were.
func (e *Engine) fanOut(ctx context.Context, keys []string, add func(p redis.Pipeliner, i int) redis.Cmder, wait bool) (cmds []redis.Cmder, errs []error, asked []bool) {
	return e.fanOutWaitFor(ctx, keys, add, func(int) bool { return wait })
}

// fanOutWaitFor is fanOut for a batch that mixes reads and writes: only the
// pipelines holding a key for which waitFor is true end with WAIT.
func (e *Engine) fanOutWaitFor(ctx context.Context, keys []string, add func(p redis.Pipeliner, i int) redis.Cmder, waitFor func(i int) bool) (cmds []redis.Cmder, errs []error, asked []bool) {
	n := len(keys)
	b := &batch{add: add, waitFor: waitFor, cmds: make([]redis.Cmder, n), errs: make([]error, n), asked: make([]bool, n)}
	groups := make(map[*redis.Client][]int)
	var order []*redis.Client
	for i, k := range keys {
		c, err := e.masterFor(ctx, k)
		if err != nil {
			b.errs[i] = err
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
			e.sendTo(ctx, c, idx, b)
		}(c, groups[c])
	}
	wg.Wait()
	return b.cmds, b.errs, b.asked
}

// sendTo sends the commands of keys idx to node c in one pipeline, then
// follows the ASK replies among them.
//
// A node answers ASK for a key of a slot it is migrating when the key has
// already left (or never existed): the command did not run, and the node
// importing the slot serves it if ASKING comes just before it on the same
// connection. The slot still belongs to the migrating node until the
// migration ends, so the routing table is left alone (a MOVED reply, once
// the slot is reassigned, is what changes it, through the retrier's reload).
// An ASK is followed once, at once; a second redirect, or TRYAGAIN from the
// importing node (a script whose keys are split between the two nodes), is
// an error the caller retries like any refusal.
func (e *Engine) sendTo(ctx context.Context, c *redis.Client, idx []int, b *batch) {
	e.pipeline(ctx, c, idx, b, false)
	var asked map[string][]int
	for _, i := range idx {
		if addr, ok := redis.IsAskError(b.errs[i]); ok {
			if asked == nil {
				asked = make(map[string][]int)
			}
			asked[addr] = append(asked[addr], i)
		}
	}
	for addr, idx := range asked {
		for _, i := range idx {
			b.asked[i] = true
		}
		target, err := e.askTarget(addr)
		if err != nil {
			for _, i := range idx {
				b.errs[i] = err
			}
			continue
		}
		e.pipeline(ctx, target, idx, b, true)
	}
}

// pipeline sends the commands of keys idx to node c in one pipeline, each
// after ASKING when asking, and the pipeline's WAIT last when it holds a
// write to wait for, so it covers the writes on the connection that made
// them.
func (e *Engine) pipeline(ctx context.Context, c *redis.Client, idx []int, b *batch, asking bool) {
	addr := c.Options().Addr
	p := c.Pipeline()
	for _, i := range idx {
		if asking {
			p.Do(ctx, "asking") // lets the importing node run the next command only
		}
		b.cmds[i] = b.add(p, i)
	}
	var w *redis.Cmd
	if e.opt.Wait > 0 && slices.ContainsFunc(idx, b.waitFor) {
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
		b.errs[i] = nodeError(addr, b.cmds[i].Err())
		if b.errs[i] == nil && waitErr != nil {
			b.errs[i] = waitErr
		}
	}
}

// askTarget returns a client for the node an ASK reply names. It has its
// own, made on first use and kept until Close: the cluster client offers
// none for an address, and the importing node may be a new master that owns
// no slot yet and so is not in its routing table.
func (e *Engine) askTarget(addr string) (*redis.Client, error) {
	e.askMu.Lock()
	defer e.askMu.Unlock()
	if e.closed.Load() {
		return nil, errClosed
	}
	c := e.askClients[addr]
	if c == nil {
		c = redis.NewClient(e.nodeOptions(addr))
		if e.askClients == nil {
			e.askClients = make(map[string]*redis.Client)
		}
		e.askClients[addr] = c
	}
	return c, nil
}
