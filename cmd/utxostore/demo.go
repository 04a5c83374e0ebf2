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
	// The synthetic blocks are mined at regtest's difficulty, which a
	// store of another network's rules would refuse: their proof of work
	// is not checked, the rest of the block checks are.
	st, err := cfg.store.openStores(ctx, createStore, pathSettings{trustBlocks: true, logger: cfg.log})
	if err != nil {
		return err
	}
	gen := newDemoChain(*seed)
	start := time.Now()
	txs := 0
	for height, b := range gen.build(*blocks) {
		if err := st.path.Connect(ctx, b, uint32(height)); err != nil {
			return errors.Join(fmt.Errorf("connecting synthetic block %d: %w", height, err), st.close())
		}
		txs += len(b.Txs)
	}
	cfg.log.Info("connected the synthetic chain", "blocks", *blocks, "txs", txs, "data", cfg.store.data,
		"engine", cfg.store.engine, "seconds", time.Since(start).Round(time.Millisecond).Seconds())
	if *exitAfterSeed {
		err := writeSummary(ctx, st.store, os.Stdout)
		return errors.Join(err, st.close())
	}
	unspent := gen.blocks[len(gen.blocks)-1].Txs[0].ID
	return serveStores(ctx, cfg, st, func(grpcAddr, httpAddr string) {
		base := "http://" + httpAddr
		fmt.Printf(`
utxostore demo is serving %d synthetic blocks. Try:

  curl %s/api/status
  curl '%s/api/status?summary=true'    # with the UTXO set's count, value and digest: a walk of every record
  curl %s/api/v2/tx/%s    # the tip's coinbase: unspent
`, *blocks, base, base, base, unspent)
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
