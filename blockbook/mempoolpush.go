package blockbook

import (
	"context"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// mempoolPollEvery is how often the API looks for transactions new to the
// store's mempool to push to address subscribers: any writer may add
// them (the follower, gRPC clients, sendtx), so they are looked for, as
// Blockbook's own mempool sync does.
const mempoolPollEvery = time.Second

// mempoolPusher pushes each transaction that enters the mempool to the
// websocket subscribers of the addresses it pays or spends from, as
// Blockbook's subscribeAddresses does. It lists the mempool only while a
// client subscribes to an address and the store has changed since it
// last looked, and pushes the transactions the last listing lacked; of
// the first listing after the subscriptions went up from none, those
// the store took since then.
type mempoolPusher struct {
	stopOnce sync.Once
	stop     chan struct{}
	stopped  chan struct{}
}

func (a *API) startMempoolPusher() {
	a.pusher = &mempoolPusher{stop: make(chan struct{}), stopped: make(chan struct{})}
	go a.pushMempool()
}

func (a *API) stopMempoolPusher() {
	a.pusher.stopOnce.Do(func() { close(a.pusher.stop) })
	<-a.pusher.stopped
}

func (a *API) pushMempool() {
	defer close(a.pusher.stopped)
	tick := time.NewTicker(mempoolPollEvery)
	defer tick.Stop()
	var seen map[chainhash.Hash]map[string]pendingTx // nil while nobody subscribes
	var lastChanges uint64
	for {
		select {
		case <-a.pusher.stop:
			return
		case <-tick.C:
		}
		since, subscribed := a.hub.subscribedSince()
		if !subscribed {
			seen = nil
			continue
		}
		changes := a.reads.Changes()
		if seen != nil && changes == lastChanges {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), a.opts.RequestTimeout)
		v, err := a.mempool(ctx)
		cancel()
		if err != nil {
			continue // looked for again at the next tick
		}
		lastChanges = changes
		for i, id := range v.ids {
			if _, old := seen[id]; old || seen == nil && v.createdAt[i] < since.UnixMilli() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), a.opts.RequestTimeout)
			a.NotifyTx(ctx, id)
			cancel()
		}
		seen = v.touched
	}
}
