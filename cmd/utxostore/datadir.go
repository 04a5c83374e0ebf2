package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/internal/fsutil"
	"github.com/utxostore/utxostore/utxo"
)

// A data directory holds one store: its engine's own directory
// (DATA/pebble or DATA/sozu), the address index (DATA/index) and, at the
// top, storeFile, which names the store's engine, network and format.
// Commands read it before opening anything, so that none opens or creates
// a second store beside the one a directory holds, and none that only
// reads creates one.

// storeFile names the file at the top of a data directory that says which
// store the directory holds.
const storeFile = "UTXOSTORE"

// dirEngines are the engines that keep their data in the data directory,
// each in a subdirectory of its name. The others keep it elsewhere (redis)
// or nowhere (memory).
var dirEngines = []string{pebble.Name, sozu.Name}

func keepsDataInDir(engineName string) bool { return slices.Contains(dirEngines, engineName) }

// storeMarker is the content of storeFile.
type storeMarker struct {
	Engine  string `json:"engine"`
	Network string `json:"network"`
	Format  int    `json:"format"`
}

// dataDir is what a data directory holds, as found without changing it.
type dataDir struct {
	path string
	// engine and network are those of the store it holds, as its
	// storeFile names them; "" when it holds none.
	engine, network string
	// exists: the directory exists.
	exists bool
}

// readDataDir finds the store in the data directory path, reading only.
// A directory that does not exist, or holds no store, is no error: the
// dataDir says so, and the caller decides whether it may create one. A
// store is named in storeFile from its creation on (storeFlags.open); an
// engine's directory without one is refused (unnamedStoreError).
func readDataDir(path string) (dataDir, error) {
	d := dataDir{path: path}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return d, nil
	case err != nil:
		return d, fmt.Errorf("reading the data directory: %w", err)
	case !st.IsDir():
		return d, usagef("--data %s is a file, not a data directory", path)
	}
	d.exists = true
	raw, err := os.ReadFile(filepath.Join(path, storeFile))
	switch {
	case err == nil:
		return d.withMarker(raw)
	case !errors.Is(err, os.ErrNotExist):
		return d, fmt.Errorf("reading the data directory: %w", err)
	}
	var found []string
	for _, name := range dirEngines {
		owner, err := fsutil.DirOwner(filepath.Join(path, name))
		if err != nil {
			return d, err
		}
		if owner == name {
			found = append(found, name)
		}
	}
	if len(found) > 0 {
		return d, &unnamedStoreError{Dir: path, Engines: found}
	}
	// An engine's own directory passed as the data directory would
	// otherwise get a second store created inside it.
	owner, err := fsutil.DirOwner(path)
	if err == nil && owner != "" {
		err = &engineSubdirError{Dir: path, Engine: owner}
	}
	return d, err
}

// withMarker fills d from storeFile's content raw.
func (d dataDir) withMarker(raw []byte) (dataDir, error) {
	var m storeMarker
	if err := json.Unmarshal(raw, &m); err != nil || !keepsDataInDir(m.Engine) || m.Network == "" {
		return d, fmt.Errorf("data directory %s: its %s file is damaged (%q): it names the store's engine, network and format, e.g. %s",
			d.path, storeFile, raw, markerJSON(storeMarker{Engine: pebble.Name, Network: "mainnet", Format: utxo.FormatVersion}))
	}
	if m.Format != utxo.FormatVersion {
		return d, fmt.Errorf("data directory %s holds a store of format %d, and this utxostore reads format %d: use the version of utxostore that wrote it, or import into a new data directory",
			d.path, m.Format, utxo.FormatVersion)
	}
	d.engine, d.network = m.Engine, m.Network
	// The engine subdirectory is checked too, so that no command
	// recreates it empty under a name that says it holds the store.
	if owner, err := fsutil.DirOwner(filepath.Join(d.path, d.engine)); err != nil || owner != d.engine {
		return d, errors.Join(err, fmt.Errorf("data directory %s names a %s store in %s, which holds none: put the store's files back there, or remove %s to start a new store in this directory",
			d.path, d.engine, filepath.Join(d.path, d.engine), filepath.Join(d.path, storeFile)))
	}
	return d, nil
}

// mark writes the directory's storeFile for its store, atomically.
func (d dataDir) mark(engineName, network string) error {
	raw := markerJSON(storeMarker{Engine: engineName, Network: network, Format: utxo.FormatVersion})
	if err := fsutil.WriteFileAtomic(filepath.Join(d.path, storeFile), []byte(raw+"\n")); err != nil {
		return fmt.Errorf("writing the data directory's %s file: %w", storeFile, err)
	}
	return nil
}

func markerJSON(m storeMarker) string {
	raw, _ := json.Marshal(m)
	return string(raw)
}

// noStoreError: a command that only reads was pointed at a data directory
// that holds no store.
type noStoreError struct {
	Dir     string
	Missing bool // the directory does not exist
}

func (e *noStoreError) Error() string {
	what := "holds no store"
	if e.Missing {
		what = "does not exist"
	}
	return fmt.Sprintf("no store in data directory %s: it %s. Check --data; 'utxostore import --data %s FILE...' or 'utxostore serve --create --data %s' creates one",
		e.Dir, what, e.Dir, e.Dir)
}

func (*noStoreError) commandLineMistake() {}

// noRedisStoreError: a command that only reads was pointed at a Redis
// namespace that holds no store.
type noRedisStoreError struct {
	Namespace string
}

func (e *noRedisStoreError) Error() string {
	return fmt.Sprintf("no store in Redis namespace %q: nothing was ever written there. Check --redis-namespace and --redis; 'utxostore import --engine redis --redis-namespace %s FILE...' or 'utxostore serve --create --engine redis --redis-namespace %s' creates one",
		e.Namespace, e.Namespace, e.Namespace)
}

func (*noRedisStoreError) commandLineMistake() {}

// storeMismatchError: --engine or --network names another store than the
// one the data directory holds.
type storeMismatchError struct {
	Dir   string
	Flag  string // "engine" or "network"
	Found string // the directory's
	Given string // the command line's
}

func (e *storeMismatchError) Error() string {
	return fmt.Sprintf("data directory %s holds a %s store (--%s %s), not %s: leave out --%s (and %s) to open it with its own, or pass --%s %s; for a new %s store choose another --data directory",
		e.Dir, e.Found, e.Flag, e.Found, e.Given, e.Flag, envName(e.Flag), e.Flag, e.Found, e.Given)
}

func (*storeMismatchError) commandLineMistake() {}

// unnamedStoreError: a data directory holding an engine's store and no
// storeFile, which names every store from its creation on: the command that
// created it was stopped before it wrote the file, or the file was removed.
type unnamedStoreError struct {
	Dir     string
	Engines []string
}

func (e *unnamedStoreError) Error() string {
	var where []string
	for _, name := range e.Engines {
		where = append(where, filepath.Join(e.Dir, name))
	}
	example := markerJSON(storeMarker{Engine: e.Engines[0], Network: "mainnet", Format: utxo.FormatVersion})
	return fmt.Sprintf("data directory %s holds the files of a store in %s but no %s file, which names a store's engine, network and format (this utxostore reads format %d): "+
		"remove %s to start again, or, if it holds a store of format %d you want, write its %s file, e.g. %s",
		e.Dir, strings.Join(where, " and "), storeFile, utxo.FormatVersion, strings.Join(where, " and "), utxo.FormatVersion, storeFile, example)
}

// engineSubdirError: the --data given is an engine's own directory inside
// a data directory, not the data directory.
type engineSubdirError struct {
	Dir    string
	Engine string
}

func (e *engineSubdirError) Error() string {
	return fmt.Sprintf("%s is the %s engine's directory inside a data directory, not a data directory: pass --data %s", e.Dir, e.Engine, filepath.Dir(e.Dir))
}

func (*engineSubdirError) commandLineMistake() {}
