// Package privkeytest holds what the tests of the daemon's refusal of
// private keys share: a key made here and the forms of it that
// must never be shown, and a daemon whose log the tests read.
package privkeytest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/internal/pathtest"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

// ZprvVersion is SLIP-132's version of a P2WPKH account's private key.
var ZprvVersion = []byte{0x04, 0xb2, 0x43, 0x0c}

// Daemon is a daemon over an empty mainnet store with the
// address index and the block store (serve --index), on a loopback port,
// with opts; its log, at every level, is written to the returned buffer.
func Daemon(t *testing.T, opts server.Options) (base string, log *SyncBuffer) {
	t.Helper()
	blobs, err := blob.NewFileStore(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := utxo.Open(context.Background(), memory.New(), utxo.Options{Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	path := pathtest.Indexed(t, db, false)
	log = &SyncBuffer{}
	opts.Network, opts.Engine = "mainnet", "memory"
	opts.GRPCAddr, opts.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	opts.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := server.New(server.NewBackend(path), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("stopping the daemon: %v", err)
		}
	})
	return "http://" + srv.HTTPAddr(), log
}

// SyncBuffer is a log's buffer, written by the daemon's goroutines.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Key is an account key (m/84'/0'/0') of a master key made
// here from a fixed seed, in the serialisation version names, and what
// of it must never be shown: the key in Base58 (any 12 of its digits in
// a row), its 32-byte private key in hex and as WIF.
func Key(t *testing.T, version []byte) (key string, secrets []string) {
	t.Helper()
	master, err := hdkeychain.NewMaster(bytes.Repeat([]byte{0x5a}, 32), &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	acct := master
	for _, i := range []uint32{84, 0, 0} {
		if acct, err = acct.Derive(hdkeychain.HardenedKeyStart + i); err != nil {
			t.Fatal(err)
		}
	}
	if version != nil {
		if acct, err = acct.CloneWithVersion(version); err != nil {
			t.Fatal(err)
		}
	}
	key = acct.String()
	priv, err := acct.ECPrivKey()
	if err != nil {
		t.Fatal(err)
	}
	raw := priv.Serialize()
	secrets = []string{hex.EncodeToString(raw), strings.ToUpper(hex.EncodeToString(raw)), base64.StdEncoding.EncodeToString(raw)}
	for _, compressed := range []bool{true, false} {
		wif, err := btcutil.NewWIF(priv, &chaincfg.MainNetParams, compressed)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, wif.String())
	}
	for i := 0; i+12 <= len(key); i++ {
		secrets = append(secrets, key[i:i+12])
	}
	return key, secrets
}

// WIF is Key's private key in Wallet Import Format (compressed), and what
// of it must never be shown: Key's secrets and any 12 digits of the WIF in
// a row.
func WIF(t *testing.T) (key string, secrets []string) {
	t.Helper()
	_, secrets = Key(t, nil)
	// Key lists the hex, upper-case hex and base64 forms, then the
	// compressed WIF.
	key = secrets[3]
	for i := 0; i+12 <= len(key); i++ {
		secrets = append(secrets, key[i:i+12])
	}
	return key, secrets
}

// Leaked is the first of secrets that s shows, or "".
func Leaked(s string, secrets []string) string {
	for _, x := range secrets {
		if strings.Contains(s, x) {
			return x
		}
	}
	return ""
}
