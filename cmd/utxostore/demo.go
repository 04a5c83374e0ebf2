package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"
)

const demoHelp = `Usage: utxostore demo [flags]

Runs the whole job on the embedded default engine with no node and no file:
generates a small deterministic synthetic chain on regtest (coinbases, and
transactions spending earlier outputs, in blocks with real merkle roots,
timestamps and regtest's proof of work), connects it block by block into a
store in a temporary directory (or --data), then serves it on loopback
like 'serve' and prints the block explorer's URL and URLs to try. Ctrl-C
stops it cleanly and removes the temporary directory.

The chain survives a reorganisation on its way: the block before its tip
first comes as a stale twin, which the last two blocks replace. Before
serving, the demo freezes an output, freezes and reassigns another, and
stores an unmined transaction and a conflicting double spend of it, so
that the explorer has each state of the store's model to show.
--exit-after-seed stops after the chain, before those.

Flags (plus every flag of 'serve'):
`

func runDemo(ctx context.Context, args []string) error {
	cfg := newServeConfig("demo", demoHelp)
	blocks := cfg.fs.Int("blocks", 200, "blocks in the synthetic chain")
	seed := cfg.fs.Uint64("seed", 1, "seed of the synthetic chain (same seed, same chain)")
	exitAfterSeed := cfg.fs.Bool("exit-after-seed", false, "stop after connecting the chain and printing the summary (tests)")
	if err := cfg.parse(args); err != nil {
		return err
	}
	if *blocks < 1 {
		return usagef("--blocks must be at least 1")
	}
	if cfg.sources["network"] == "default" {
		cfg.store.network = "regtest"
	}
	if cfg.sources["data"] == "default" {
		dir, err := os.MkdirTemp("", "utxostore-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.store.data = dir
	}
	// The synthetic chain starts at regtest's genesis block and is mined
	// at regtest's difficulty, which a store of another network's rules
	// (--network) would refuse: there its genesis block and proof of work
	// are not checked, the rest of the block checks are.
	st, err := cfg.store.openStores(ctx, createStore, pathSettings{trustBlocks: cfg.store.network != "regtest", logger: cfg.log})
	if err != nil {
		return err
	}
	gen := newDemoChain(*seed)
	gen.build(*blocks)
	start := time.Now()
	reorged, err := connectDemoChain(ctx, st.path, gen)
	if err != nil {
		return st.fail(ctx, err)
	}
	txs := 0
	for _, b := range gen.blocks {
		txs += len(b.Txs)
	}
	cfg.log.Info("connected the synthetic chain", "blocks", *blocks, "txs", txs, "reorganised", reorged, "network", cfg.store.network,
		"data", cfg.store.data, "engine", cfg.store.engine, "seconds", time.Since(start).Round(time.Millisecond).Seconds())
	if *exitAfterSeed {
		err := writeSummary(ctx, st.store, os.Stdout)
		return errors.Join(err, st.close())
	}
	story, told, err := tellDemoStory(ctx, st.store, gen)
	if err != nil {
		return errors.Join(err, st.close())
	}
	if !told {
		cfg.log.Info("the chain is too short for frozen, reassigned, unmined and conflicting examples; --blocks 120 has them")
	}
	unspent := gen.blocks[len(gen.blocks)-1].Txs[0].ID
	return serveStores(ctx, cfg, st, func(grpcAddr, httpAddr string) {
		base := "http://" + httpAddr
		fmt.Printf(`Block explorer: %s/

utxostore demo is serving %d synthetic %s blocks. Try:

`, base, *blocks, cfg.store.network)
		if st.index == nil {
			fmt.Println("  (demo --index keeps the address index and the block store: the explorer then shows addresses and every block's transactions)")
		}
		if told {
			fmt.Printf(`  %s/tx/%s#output-%d    # a frozen output
  %s/tx/%s#output-%d    # a frozen output reassigned to another script
  %s/tx/%s    # an unmined transaction
  %s/tx/%s    # a double spend of it, kept as conflicting
  %s/mempool
`, base, story.Frozen.Hash, story.Frozen.Index, base, story.Reassigned.Hash, story.Reassigned.Index,
				base, story.Unmined, base, story.Conflicting, base)
		}
		if reorged {
			fmt.Printf("  %s/block/%d    # mined after a stale twin of it was reorganised away\n", base, *blocks-2)
		}
		fmt.Printf(`
Blockbook's API and the store's own:

  curl %s/api/status
  curl '%s/api/status?summary=true'    # with the UTXO set's count, value and digest: a walk of every record
  curl %s/api/v2/tx/%s    # the tip's coinbase: unspent
`, base, base, base, unspent)
		if st.index != nil {
			script := gen.blocks[len(gen.blocks)-1].Txs[0].Msg.TxOut[0].PkScript
			fmt.Printf("  curl %s/api/v2/address/%s    # the tip coinbase's script, by address descriptor\n", base, hex.EncodeToString(script))
		}
		if s := gen.firstSpend; s != nil {
			fmt.Printf("  curl %s/api/v2/tx/%s    # spent by %s\n", base, s.parent, s.spender)
		}
		fmt.Printf(`  curl %s/api/v2/block/%d
  curl %s/metrics
  utxostore client --server %s get %s

Ctrl-C stops it.
`, base, *blocks-1, base, grpcAddr, unspent)
	})
}

// demoTime is a block time: ten minutes apart from 2009-01-03.
func demoTime(height uint32) time.Time {
	return time.Unix(1231006505+int64(height)*600, 0)
}
