package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protodelim"

	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/engine"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/snapshot/teranode"
	"github.com/utxostore/utxostore/utxo"
)

// Snapshots take the daemon's whole-store copies, each at one block while
// the daemon serves; the command that opened the data directory, which
// knows its layout, provides them.
type Snapshots interface {
	// Backup copies the data directory into dir, an absolute path that
	// does not exist or is an empty directory (checked already), and
	// reports the block the copy stands at and the set's statistics
	// there.
	Backup(ctx context.Context, dir string) (BackupResult, error)
	// DumpCoins calls tip with the store's tip, then coin with every coin
	// of the set there (coinstats.Coin.InSet) and, withHeaders, header
	// with every block header from the genesis block to the tip, with no
	// block connected meanwhile. The coin is the callee's for the call
	// only.
	DumpCoins(ctx context.Context, withHeaders bool, tip func(utxo.Tip) error, coin func(*coinstats.Coin) error, header func(teranode.BlockIndex) error) error
	// SpoolDir is where a dump is spooled before it is sent: a directory
	// on the data directory's disk, which has room for the set.
	SpoolDir() string
}

// BackupResult is where a backup stands.
type BackupResult struct {
	Tip   utxo.Tip
	Stats coinstats.Summary
}

// BackupDirError refuses a backup's target directory before anything is
// written: it is relative, is not empty, or its parent does not exist.
type BackupDirError struct {
	Dir    string
	Reason string
}

func (e *BackupDirError) Error() string {
	return fmt.Sprintf("backup directory %s %s: name a new or empty directory, by its absolute path on the daemon's machine", e.Dir, e.Reason)
}

// CheckBackupDir refuses a backup target that is relative, exists as
// anything but an empty directory, or whose parent does not exist.
func CheckBackupDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return &BackupDirError{Dir: dir, Reason: "is a relative path"}
	}
	if st, err := os.Stat(filepath.Dir(dir)); err != nil || !st.IsDir() {
		return &BackupDirError{Dir: dir, Reason: "has no parent directory"}
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return &BackupDirError{Dir: dir, Reason: fmt.Sprintf("cannot be read as an empty directory (%v)", err)}
	case len(entries) > 0:
		return &BackupDirError{Dir: dir, Reason: fmt.Sprintf("is not empty (it holds %s)", entries[0].Name())}
	}
	return nil
}

// ErrNoBlock refuses a backup or a dump of a store that holds no block.
var ErrNoBlock = errors.New("the store holds no block")

// snapshotStatus is a backup's or a dump's error as a gRPC status: a
// refused target or engine is the caller's to fix.
func snapshotStatus(err error) error {
	switch {
	case errors.As(err, new(*BackupDirError)):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.As(err, new(*engine.CannotCopyError)), errors.Is(err, ErrNoBlock):
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	return storeStatus(err)
}

func (s *grpcService) Backup(ctx context.Context, r *pb.BackupRequest) (*pb.BackupReply, error) {
	if s.snapshots == nil {
		return nil, status.Error(codes.Unimplemented, "this daemon takes no backups")
	}
	if err := CheckBackupDir(r.Dir); err != nil {
		return nil, snapshotStatus(err)
	}
	res, err := s.snapshots.Backup(ctx, r.Dir)
	if err != nil {
		return nil, snapshotStatus(err)
	}
	return &pb.BackupReply{Tip: &pb.BlockRef{Height: res.Tip.Height, Hash: res.Tip.Hash[:]},
		Txouts: res.Stats.TxOuts, TotalAmount: res.Stats.TotalAmount, Muhash: res.Stats.MuHash}, nil
}

// dumpReplyBytes is about the most a DumpCoins reply holds (coins or
// headers are sent once they reach it): well under any message limit,
// even with the longest scripts the set may hold.
const dumpReplyBytes = 1 << 20

// DumpCoins walks the set with blocks held, but writes the replies into a
// spool file rather than to the client, and sends them once blocks flow
// again: a client that reads slowly, or stops reading, must not keep
// blocks out for as long as it likes. The spool is unlinked as soon as it
// is made, so a crash leaves nothing behind.
func (s *grpcService) DumpCoins(r *pb.DumpCoinsRequest, stream pb.UtxoStore_DumpCoinsServer) error {
	if s.snapshots == nil {
		return status.Error(codes.Unimplemented, "this daemon dumps no snapshots")
	}
	spool, err := os.CreateTemp(s.snapshots.SpoolDir(), ".dump-spool-")
	if err != nil {
		return status.Errorf(codes.Unavailable, "spooling the dump: %v", err)
	}
	defer spool.Close()
	if err := os.Remove(spool.Name()); err != nil {
		return status.Errorf(codes.Unavailable, "spooling the dump: %v", err)
	}
	if err := s.spoolDump(stream.Context(), r.Headers, spool); err != nil {
		return snapshotStatus(err)
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return status.Errorf(codes.Unavailable, "reading the dump's spool: %v", err)
	}
	replies := bufio.NewReaderSize(spool, dumpReplyBytes)
	for {
		reply := &pb.DumpCoinsReply{}
		switch err := protodelim.UnmarshalFrom(replies, reply); {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return status.Errorf(codes.Unavailable, "reading the dump's spool: %v", err)
		}
		if err := stream.Send(reply); err != nil {
			return err
		}
	}
}

// spoolDump writes the dump's replies, size-delimited, to spool.
func (s *grpcService) spoolDump(ctx context.Context, withHeaders bool, spool io.Writer) error {
	w := bufio.NewWriterSize(spool, dumpReplyBytes)
	reply, size := &pb.DumpCoinsReply{}, 0
	flush := func(force bool) error {
		if !force && size < dumpReplyBytes {
			return nil
		}
		_, err := protodelim.MarshalTo(w, reply)
		reply, size = &pb.DumpCoinsReply{}, 0
		return err
	}
	err := s.snapshots.DumpCoins(ctx, withHeaders,
		func(tip utxo.Tip) error {
			reply.Tip = &pb.BlockRef{Height: tip.Height, Hash: tip.Hash[:]}
			return flush(true)
		},
		func(c *coinstats.Coin) error {
			txid := c.TxID // the coin is lent for the call
			reply.Coins = append(reply.Coins, &pb.Coin{Txid: txid[:], Vout: c.Vout, Height: c.Height, Coinbase: c.Coinbase,
				Value: c.Value, Script: append([]byte(nil), c.Script...)})
			size += 64 + len(c.Script)
			return flush(false)
		},
		func(b teranode.BlockIndex) error {
			var header bytes.Buffer
			if err := b.Header.Serialize(&header); err != nil {
				return err
			}
			reply.Headers = append(reply.Headers, &pb.BlockHeader{Header: header.Bytes(), Height: b.Height, TxCount: b.TxCount})
			size += 100
			return flush(false)
		})
	if err == nil && (len(reply.Coins) > 0 || len(reply.Headers) > 0) {
		err = flush(true)
	}
	if err != nil {
		return err
	}
	return w.Flush()
}
