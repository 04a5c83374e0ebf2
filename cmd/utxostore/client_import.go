package main

import (
	"context"
	"fmt"
	"os"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// serverImport sends the blocks of block files to a running daemon with the
// ConnectBlock RPC, the first block at startHeight. It resumes where the
// daemon stands: blocks below the height the daemon needs next are skipped
// (HealthInfo.NextHeight: after its tip, or, when a crash left the address
// index or the block store behind the store, from the first block they
// lack), once the file shows the daemon's tip at the tip's height (another
// block there is another chain, refused). A block the daemon refuses is
// named with its file offset.
//
// When every block is in, it prints the daemon's summary line on stdout,
// the line a direct import ends with.
//
// import.go calls it for `utxostore import --server ADDR`.
func serverImport(ctx context.Context, addr, token string, tlsFlags *clientTLS, paths []string, startHeight uint32, progress blockProgress) error {
	c, err := dial(addr, token, tlsFlags)
	if err != nil {
		return err
	}
	defer c.Close()
	health, err := c.Info(ctx)
	if err != nil {
		return fmt.Errorf("daemon at %s: %w", addr, err)
	}
	err = forEachBlock(ctx, paths, startHeight, health.Network, func(path string, height uint32, reader *chain.BlockReader) error {
		hash := reader.Info().Hash
		for _, tip := range []*utxo.Tip{health.Tip, health.IndexTip} {
			if tip != nil && tip.Height == height && tip.Hash != hash {
				return fmt.Errorf("%s: the daemon at %s holds block %s at height %d, but this file has %s there: it holds another chain",
					path, addr, tip.Hash, height, hash)
			}
		}
		if height < health.NextHeight {
			return nil // the daemon holds it
		}
		b, err := reader.ReadBlock()
		if err != nil {
			return fmt.Errorf("%s: block at height %d: %w", path, height, err)
		}
		if _, _, err := c.ConnectBlock(ctx, b.Raw, height); err != nil {
			return fmt.Errorf("%s: connecting block at height %d: %w", path, height, reader.Locate(err))
		}
		progress.block(height, len(b.Txs), b.Size)
		return nil
	})
	if err != nil {
		return err
	}
	progress.done()
	sum, err := c.Summary(ctx)
	if err != nil {
		return fmt.Errorf("daemon at %s: the summary: %w", addr, err)
	}
	return printSummaryLine(sum, os.Stdout)
}

// totalSize is the size of the files, for the progress bar's ETA.
func totalSize(paths []string) int64 {
	var n int64
	for _, p := range paths {
		if info, err := os.Stat(p); err == nil {
			n += info.Size()
		}
	}
	return n
}
