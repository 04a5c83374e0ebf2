// Package utxostorepb holds the generated protobuf and gRPC code of the
// utxostore service; see ../README.md for how to regenerate it.
package utxostorepb

//go:generate protoc -I. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative utxostore.proto
