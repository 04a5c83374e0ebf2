// Package fsutil holds the file-system rules the engines and the command
// share: a data directory is claimed by one engine (MarkerFile) and checked
// on every open, and a file is replaced atomically and durably
// (WriteFileAtomic, SyncDir), and a directory is copied durably (CopyTree).
package fsutil
