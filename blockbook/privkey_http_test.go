package blockbook_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/gorilla/websocket"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

// zprvVersion is SLIP-132's version of a P2WPKH account's private key.
var zprvVersion = []byte{0x04, 0xb2, 0x43, 0x0c}

// TestTheAPIRefusesAnExtendedPrivateKeyWithoutEchoingIt: a wallet's user
// who sends an xprv or zprv where the API takes an xpub or an address (or
// anything else) is answered 400 with the refusal, and neither the answer
// nor the daemon's log shows the key, or its private key in another form.
// The routes used to answer "Invalid xpub "xprv…"" and "Invalid address,
// "zprv…" is neither…", quoting the key's first 80 digits.
func TestTheAPIRefusesAnExtendedPrivateKeyWithoutEchoingIt(t *testing.T) {
	base, log := privateKeyServer(t, server.Options{})
	for _, version := range [][]byte{nil, zprvVersion} {
		key, secrets := testPrivateKey(t, version)
		for _, path := range []string{
			"/api/v2/xpub/" + key,
			"/api/xpub/" + key,
			"/api/v2/xpub/" + key + "?details=txs&gap=20",
			"/api/v2/address/" + key,
			"/api/v2/address/%20" + key,
			"/api/v2/utxo/" + key,
			"/api/v2/balancehistory/" + key,
			"/api/v2/tx/" + key,
			"/api/v2/tx-specific/" + key,
			"/api/v2/block/" + key,
			"/api/v2/block-index/" + key,
			"/api/v2/estimatefee/" + key,
			"/api/v2/address/1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa?from=" + url.QueryEscape("key: "+key),
		} {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			var answer struct{ Error string }
			_ = json.Unmarshal(body, &answer)
			what := strings.Replace(path, key, "<key>", 1)
			if x := leaked(string(body), secrets); x != "" {
				t.Errorf("GET %s shows the private key (%q): %s", what, x, body)
			}
			if x := leaked(strings.Join(resp.Header.Values("Location"), " "), secrets); x != "" {
				t.Errorf("GET %s redirects to the private key (%q)", what, x)
			}
			if resp.StatusCode != http.StatusBadRequest || answer.Error != blockbook.PrivateKeyRefusal {
				t.Errorf("GET %s: HTTP %d %q, want 400 %q", what, resp.StatusCode, answer.Error, blockbook.PrivateKeyRefusal)
			}
		}
	}
	if x := leaked(log.String(), allSecrets(t)); x != "" {
		t.Errorf("the daemon's log shows the private key (%q):\n%s", x, log)
	}
}

// TestTheWebsocketRefusesAnExtendedPrivateKeyWithoutEchoingIt: the
// websocket's methods that take an xpub or addresses, and any method,
// refuse an extended private key with the refusal and without the key.
func TestTheWebsocketRefusesAnExtendedPrivateKeyWithoutEchoingIt(t *testing.T) {
	base, log := privateKeyServer(t, server.Options{})
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+blockbook.WebsocketPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, version := range [][]byte{nil, zprvVersion} {
		key, secrets := testPrivateKey(t, version)
		// JSON's escapes spell the key's first digit otherwise.
		escaped := `\u00` + hex.EncodeToString([]byte(key[:1])) + key[1:]
		for i, req := range []string{
			`{"id":"1","method":"getAccountInfo","params":{"descriptor":"` + key + `","details":"txs"}}`,
			`{"id":"2","method":"getAccountInfo","params":{"descriptor":"` + escaped + `"}}`,
			`{"id":"3","method":"getAccountUtxo","params":{"descriptor":"` + key + `"}}`,
			`{"id":"4","method":"getBalanceHistory","params":{"descriptor":"` + key + `"}}`,
			`{"id":"5","method":"subscribeAddresses","params":{"addresses":["1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa","` + key + `"]}}`,
			`{"id":"6","method":"getTransaction","params":{"txid":"` + key + `"}}`,
			`{"id":"7","method":"` + key + `","params":{}}`,
			`{"id":"8","method":"getAccountInfo","params":{"descriptor":"` + key + `","page":"one"}}`,
		} {
			if err := conn.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, msg, err := conn.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			var answer struct {
				Data struct {
					Error struct{ Message string }
				}
			}
			_ = json.Unmarshal(msg, &answer)
			if x := leaked(string(msg), secrets); x != "" {
				t.Errorf("request %d shows the private key (%q): %s", i+1, x, msg)
			}
			if answer.Data.Error.Message != blockbook.PrivateKeyRefusal {
				t.Errorf("request %d is answered %s, want the refusal", i+1, msg)
			}
		}
	}
	if x := leaked(log.String(), allSecrets(t)); x != "" {
		t.Errorf("the daemon's log shows the private key (%q):\n%s", x, log)
	}
}

// TestTheTokensRefusalDoesNotEchoAnExtendedPrivateKey: the 401 of a
// daemon with --token named the path it refused, and so the key in
// /api/v2/xpub/<xprv>.
func TestTheTokensRefusalDoesNotEchoAnExtendedPrivateKey(t *testing.T) {
	base, log := privateKeyServer(t, server.Options{Token: "s3cret"})
	key, secrets := testPrivateKey(t, nil)
	for _, path := range []string{"/api/v2/xpub/" + key, "/xpub/" + key, "/search?q=" + key} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		what := strings.Replace(path, key, "<key>", 1)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: HTTP %d, want 401", what, resp.StatusCode)
		}
		if x := leaked(string(body), secrets); x != "" {
			t.Errorf("GET %s without the token shows the private key (%q): %s", what, x, body)
		}
	}
	if x := leaked(log.String(), secrets); x != "" {
		t.Errorf("the daemon's log shows the private key (%q):\n%s", x, log)
	}
}

// allSecrets are the secrets of every test key.
func allSecrets(t *testing.T) []string {
	_, a := testPrivateKey(t, nil)
	_, b := testPrivateKey(t, zprvVersion)
	return append(a, b...)
}

// privateKeyServer is a daemon over an empty mainnet store with the
// address index and the block store (serve --index), on a loopback port,
// with opts; its log, at every level, is written to the returned buffer.
func privateKeyServer(t *testing.T, opts server.Options) (base string, log *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	idx, err := index.Open(filepath.Join(dir, "index"), index.Options{Coin: "Bitcoin", NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	blocks, err := blockstore.Open(filepath.Join(dir, "blocks"), blockstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blocks.Close() })
	blobs, err := blob.NewFileStore(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := utxo.Open(context.Background(), memory.New(), utxo.Options{Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rules, err := chain.NetworkRules("mainnet", false)
	if err != nil {
		t.Fatal(err)
	}
	path, err := blockpath.Open(context.Background(), blockpath.Config{Store: db, Rules: rules, Blocks: blocks, Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	log = &syncBuffer{}
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

// syncBuffer is a log's buffer, written by the daemon's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testPrivateKey is an account key (m/84'/0'/0') of a master key made
// here from a fixed seed, in the serialisation version names, and what
// of it must never be shown: the key in Base58 (any 12 of its digits in
// a row), its 32-byte private key in hex and as WIF.
func testPrivateKey(t *testing.T, version []byte) (key string, secrets []string) {
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

// leaked is the first of secrets that s shows, or "".
func leaked(s string, secrets []string) string {
	for _, x := range secrets {
		if strings.Contains(s, x) {
			return x
		}
	}
	return ""
}
