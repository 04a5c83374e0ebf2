package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/utxostore/utxostore/engine/redis"
)

// newStoreDir is what a command that may create a store (createStore)
// found of its data directory before opening it, so that a command that
// fails before the store it created holds a block leaves the directory as
// it found it: bad input (a block file of another network, a damaged or
// missing one) changes nothing, and the next command, with the right file
// or another --network, finds no empty store claiming the directory.
//
// A directory that did not exist goes whole, with the parents the command
// created for it; one that existed, holding no store, loses only the
// entries the command added (the engine's directory, storeFile, the index,
// the block store), so a user's directory stays. A directory that held a
// store is never touched. On engine redis, a namespace the command made
// (redis.Engine.MadeNamespace) is dropped too; one that held keys before
// stays as it is.
type newStoreDir struct {
	// remove is the topmost directory the command creates: the data
	// directory, or its highest missing parent; "" when it exists.
	remove string
	// dir is the data directory when it existed, holding no store, and
	// before the names of its entries then.
	dir    string
	before map[string]bool
	// namespace is the Redis namespace the command made, nil if none.
	namespace *redis.Options
}

// noteNewStoreDir reads the data directory path before a command that may
// create a store in it opens anything. It returns nil (nothing to undo)
// when the directory holds a store, or cannot be read: the command's own
// checks refuse what is wrong with it.
func noteNewStoreDir(path string) *newStoreDir {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	d, err := readDataDir(abs)
	if err != nil || d.engine != "" {
		return nil
	}
	if !d.exists {
		top := abs
		for {
			parent := filepath.Dir(top)
			if parent == top {
				break
			}
			if _, err := os.Lstat(parent); !errors.Is(err, os.ErrNotExist) {
				break
			}
			top = parent
		}
		return &newStoreDir{remove: top}
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil
	}
	n := &newStoreDir{dir: abs, before: make(map[string]bool, len(entries))}
	for _, e := range entries {
		n.before[e.Name()] = true
	}
	return n
}

// undo removes what the command created in or for the data directory,
// and the Redis namespace it made.
func (n *newStoreDir) undo(ctx context.Context) error {
	if n == nil {
		return nil
	}
	return errors.Join(n.dropNamespace(ctx), n.removeFiles())
}

// dropNamespace removes the Redis namespace the command made, if any.
func (n *newStoreDir) dropNamespace(ctx context.Context) error {
	if n.namespace == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := redis.Drop(ctx, *n.namespace); err != nil {
		return fmt.Errorf("removing the Redis namespace %q this command made: %w", n.namespace.Namespace, err)
	}
	return nil
}

// removeFiles removes the data directory the command created, or the
// entries it added to one that existed.
func (n *newStoreDir) removeFiles() error {
	if n.remove != "" {
		if err := os.RemoveAll(n.remove); err != nil {
			return fmt.Errorf("removing the data directory %s this command created: %w", n.remove, err)
		}
		return nil
	}
	entries, err := os.ReadDir(n.dir)
	if err != nil {
		return fmt.Errorf("removing what this command created in the data directory %s: %w", n.dir, err)
	}
	var errs []error
	for _, e := range entries {
		if !n.before[e.Name()] {
			errs = append(errs, os.RemoveAll(filepath.Join(n.dir, e.Name())))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing what this command created in the data directory %s: %w", n.dir, err)
	}
	return nil
}

// fail closes the stores of a command that failed with err. When the
// command created the store (newStoreDir) and it holds no block yet, the
// data directory is put back as the command found it. The store is found
// empty while it is still open, so under the engine's lock: a store
// another command has filled meanwhile is kept.
func (s *stores) fail(ctx context.Context, err error) error {
	undo := false
	if s.created != nil && s.store != nil {
		_, haveTip, tipErr := s.store.Tip(context.WithoutCancel(ctx))
		undo = tipErr == nil && !haveTip
	}
	closeErr := s.close()
	if undo && closeErr == nil {
		return errors.Join(err, s.created.undo(ctx))
	}
	return errors.Join(err, closeErr)
}
