// Package fsutil holds the file-system rules the engines and the command
// share: a data directory is claimed by one engine (MarkerFile) and checked
// on every open, and a file is replaced atomically and durably
// (WriteFileAtomic, SyncDir), a new file is written under a temporary
// name and renamed into place once whole (CreatePartial, PlacePartial),
// what a killed process left under such names is removed (RemoveTemps),
// and a directory is copied durably (CopyTree).
package fsutil
