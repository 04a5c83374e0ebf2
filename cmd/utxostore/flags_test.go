package main

import "flag"

// long runs the long variants of the end-to-end tests: 100 daemon kills in
// TestImportThroughADaemonSurvivesSIGKILL, 30 sync kills over more blocks
// in TestSyncFromBtcd, and the sync-against-import measurement.
var long = flag.Bool("long", false, "run the long variants of the end-to-end tests (more kills, more blocks, the sync-against-import measurement)")
