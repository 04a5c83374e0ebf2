package main

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/client"
	"github.com/utxostore/utxostore/utxo"
)

// serverImport sends the blocks of block files to a running daemon with the
// ConnectBlock RPC, the first block at startHeight. It resumes where the
// daemon stands: blocks up to the daemon's tip are skipped, once the file
// shows the tip's own block at the tip's height (another block there is
// another chain, refused), and with the address index on, sending starts
// after the index's tip when that is behind the store's (as a crash
// between the two leaves it), so the daemon indexes those blocks. A block
// the daemon refuses is named with its file offset.
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
	resume := resumeHeight(health)
	err = forEachBlock(ctx, paths, startHeight, health.Network, func(path string, height uint32, reader *chain.BlockReader) error {
		hash := reader.Info().Hash
		for _, tip := range []*utxo.Tip{health.Tip, health.IndexTip} {
			if tip != nil && tip.Height == height && tip.Hash != hash {
				return fmt.Errorf("%s: the daemon at %s holds block %s at height %d, but this file has %s there: it holds another chain",
					path, addr, tip.Hash, height, hash)
			}
		}
		if height < resume {
			return nil // the daemon holds it
		}
		raw, txs, err := rawBlock(reader)
		if err != nil {
			return fmt.Errorf("%s: block at height %d: %w", path, height, err)
		}
		if _, _, err := c.ConnectBlock(ctx, raw, height); err != nil {
			return fmt.Errorf("%s: connecting block at height %d: %w", path, height, reader.Locate(err))
		}
		progress.block(height, txs, int64(len(raw)))
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

// resumeHeight is the first height the daemon lacks: the one after its
// tip, or after its address index's tip when that is behind.
func resumeHeight(h client.HealthInfo) uint32 {
	next := func(tip *utxo.Tip) uint32 {
		if tip == nil {
			return 0
		}
		return tip.Height + 1
	}
	if h.Indexed {
		return min(next(h.Tip), next(h.IndexTip))
	}
	return next(h.Tip)
}

// rawBlock reassembles a block's bytes from the reader: the header, the
// transaction count and each transaction's bytes exactly as read.
func rawBlock(r *chain.BlockReader) ([]byte, int, error) {
	var buf bytes.Buffer
	if err := r.Header().Serialize(&buf); err != nil {
		return nil, 0, err
	}
	if err := wire.WriteVarInt(&buf, 0, r.Remaining()); err != nil {
		return nil, 0, err
	}
	txs := 0
	for r.Remaining() > 0 {
		tx, err := r.Next()
		if err != nil {
			return nil, 0, err
		}
		buf.Write(tx.Raw)
		txs++
	}
	return buf.Bytes(), txs, nil
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
