package main

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/btcsuite/btcd/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/chain"
)

// serverImport sends the blocks of block files to a running daemon with the
// ConnectBlock RPC, the first block at startHeight. Blocks below the
// daemon's height are skipped, and a block the daemon refuses as not
// extending its tip at a height it already holds is taken as imported
// before, so an interrupted import resumes.
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
	health, err := c.Health(ctx)
	if err != nil {
		return fmt.Errorf("daemon at %s: %w", addr, err)
	}
	err = forEachBlock(ctx, paths, startHeight, health.Network, func(path string, height uint32, reader *chain.BlockReader) error {
		raw, txs, err := rawBlock(reader)
		if err != nil {
			return fmt.Errorf("%s: block at height %d: %w", path, height, err)
		}
		if height < health.Height {
			return nil
		}
		if _, _, err := c.ConnectBlock(ctx, raw, height); err != nil {
			if height == health.Height && status.Code(err) == codes.FailedPrecondition {
				return nil // the daemon's tip: imported before
			}
			return fmt.Errorf("%s: connecting block at height %d: %w", path, height, err)
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
