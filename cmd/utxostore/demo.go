package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/utxostore/utxostore/server"
)

const demoHelp = `Usage: utxostore demo [flags]

Runs the whole job on the embedded default engine with no node and no file:
generates a small deterministic synthetic chain (coinbases, and transactions
spending earlier outputs), connects it block by block into a store in a
temporary directory (or --data), then serves it on loopback like 'serve'
and prints URLs to try. Ctrl-C stops it cleanly and removes the temporary
directory.

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
	if cfg.sources["data"] == "default" {
		dir, err := os.MkdirTemp("", "utxostore-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.store.data = dir
	}
	store, err := cfg.store.open(ctx, createStore)
	if err != nil {
		return err
	}
	idx, err := cfg.store.openIndex()
	if err != nil {
		store.Close()
		return err
	}
	blockStore, err := cfg.store.openBlocks()
	if err != nil {
		store.Close()
		if idx != nil {
			idx.Close()
		}
		return err
	}
	gen := newDemoChain(*seed)
	start := time.Now()
	txs := 0
	for _, b := range gen.build(*blocks) {
		err := store.ConnectBlock(ctx, b)
		if err == nil {
			err = server.IndexBlock(idx, b)
		}
		if err == nil {
			err = server.StoreBlock(blockStore, b)
		}
		if err != nil {
			store.Close()
			if idx != nil {
				idx.Close()
			}
			if blockStore != nil {
				blockStore.Close()
			}
			return fmt.Errorf("connecting synthetic block %d: %w", b.Height, err)
		}
		txs += len(b.Txs)
	}
	fmt.Fprintf(os.Stderr, "utxostore demo: connected %d blocks, %d txs into %s (%s engine) in %.1fs\n",
		*blocks, txs, cfg.store.data, cfg.store.engine, time.Since(start).Seconds())
	if *exitAfterSeed {
		err := writeSummary(ctx, store, os.Stdout)
		if closeErr := store.Close(); err == nil {
			err = closeErr
		}
		if idx != nil {
			if closeErr := idx.Close(); err == nil {
				err = closeErr
			}
		}
		if blockStore != nil {
			if closeErr := blockStore.Close(); err == nil {
				err = closeErr
			}
		}
		return err
	}
	unspent := gen.blocks[len(gen.blocks)-1].Txs[0].ID
	return serveStore(ctx, cfg, store, idx, blockStore, func(grpcAddr, httpAddr string) {
		base := "http://" + httpAddr
		fmt.Printf(`
utxostore demo is serving %d synthetic blocks. Try:

  curl %s/api/status
  curl '%s/api/status?summary=true'    # with the UTXO set's count, value and digest: a walk of every record
  curl %s/api/v2/tx/%s    # the tip's coinbase: unspent
`, *blocks, base, base, base, unspent)
		if idx != nil {
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
