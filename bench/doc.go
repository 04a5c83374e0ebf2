// Package bench holds the engine benchmark of utxostore: one operation
// stream (package workload), replayed against every engine and against a
// plain Go map (package mapref) by package driver, and summarised by package
// report. With --index the blocks go along the block path (package
// blockpath, driver.Path) into the address index too, as import --index
// takes them. The command is `utxostore bench`; BENCHMARKS.md at the module
// root describes the method and the latest figures.
package bench
