package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/utxostore/utxostore/chain"
)

// forEachBlock walks the blocks of the files in order, the first at height
// start, and hands each one's streaming reader to fn. A file whose magic
// names another network than network is refused before any of its blocks
// (chain.Magic.CheckNetwork). Errors name the file and the height; fn's
// own errors are returned as they are.
func forEachBlock(ctx context.Context, paths []string, start uint32, network string, fn func(path string, height uint32, r *chain.BlockReader) error) error {
	height := start
	for _, path := range paths {
		blocks, err := chain.OpenBlockFile(path)
		if err != nil {
			return err
		}
		if magic, framed := blocks.Magic(); framed {
			if err := magic.CheckNetwork(network); err != nil {
				blocks.Close()
				return fmt.Errorf("%s: %w; this store is for %s: give it %s block files, or import this file with --network %s into a data directory that holds no store or a %s one", path, err, network, network, magic.Network(), magic.Network())
			}
		}
		for {
			if err = ctx.Err(); err != nil {
				break
			}
			var r *chain.BlockReader
			r, err = blocks.Next()
			if errors.Is(err, io.EOF) {
				err = nil
				break
			}
			if err != nil {
				err = fmt.Errorf("%s: block at height %d: %w", path, height, err)
				break
			}
			if err = fn(path, height, r); err != nil {
				break
			}
			height++
		}
		blocks.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
