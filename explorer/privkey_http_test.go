package explorer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"html"
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

// TestTheExplorerRefusesAnExtendedPrivateKeyWithoutEchoingIt: a wallet's
// user who pastes an xprv or zprv into the search box, or opens a page
// with one in its path, is answered 400 with the refusal: no redirect
// (which put the key in /address/<key>), and neither the page (its
// message, title and search box) nor the daemon's log shows the key, or
// its private key in another form.
func TestTheExplorerRefusesAnExtendedPrivateKeyWithoutEchoingIt(t *testing.T) {
	base, log := privateKeyServer(t, server.Options{})
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var all []string
	for _, version := range [][]byte{nil, {0x04, 0xb2, 0x43, 0x0c}} {
		key, secrets := testPrivateKey(t, version)
		all = append(all, secrets...)
		type request struct {
			method, path string
			form         url.Values
		}
		for _, req := range []request{
			{"GET", "/search?q=" + url.QueryEscape(key), nil},
			{"GET", "/search?q=" + url.QueryEscape("  "+key+"\n"), nil},
			{"POST", "/search", url.Values{"q": {key}}},
			{"POST", "/search", url.Values{"q": {"my key: " + key}}},
			{"GET", "/xpub/" + key, nil},
			{"GET", "/xpub/" + key + "?page=2", nil},
			{"GET", "/address/" + key, nil},
			{"GET", "/block/" + key, nil},
			{"GET", "/tx/" + key, nil},
		} {
			var resp *http.Response
			var err error
			if req.method == "POST" {
				resp, err = noFollow.PostForm(base+req.path, req.form)
			} else {
				resp, err = noFollow.Get(base + req.path)
			}
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			page := html.UnescapeString(string(body))
			what := req.method + " " + strings.Replace(req.path, key, "<key>", 1)
			if x := leaked(page, secrets); x != "" {
				t.Errorf("%s shows the private key (%q):\n%s", what, x, page)
			}
			if loc := resp.Header.Get("Location"); loc != "" {
				t.Errorf("%s redirects (to %q), want a refusal", what, loc)
				if x := leaked(loc, secrets); x != "" {
					t.Errorf("%s redirects to the private key (%q)", what, x)
				}
			}
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, blockbook.PrivateKeyRefusal) {
				t.Errorf("%s: HTTP %d without the refusal, want 400 %q:\n%s", what, resp.StatusCode, blockbook.PrivateKeyRefusal, page)
			}
		}
		// Its public key is found as ever, by a post as by a get.
		// (hdkeychain neuters BIP32's own versions only: the zpub is the
		// xpub's key under SLIP-132's version.)
		xprv, _ := testPrivateKey(t, nil)
		acct, err := hdkeychain.NewKeyFromString(xprv)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := acct.Neuter()
		if err != nil {
			t.Fatal(err)
		}
		if version != nil {
			if pub, err = pub.CloneWithVersion([]byte{0x04, 0xb2, 0x47, 0x46}); err != nil {
				t.Fatal(err)
			}
		}
		for _, get := range []bool{true, false} {
			var resp *http.Response
			if get {
				resp, err = noFollow.Get(base + "/search?q=" + url.QueryEscape(pub.String()))
			} else {
				resp, err = noFollow.PostForm(base+"/search", url.Values{"q": {pub.String()}})
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := "/xpub/" + pub.String(); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
				t.Errorf("searching the xpub (get %v): HTTP %d to %q, want 303 to %q", get, resp.StatusCode, resp.Header.Get("Location"), want)
			}
		}
	}
	if x := leaked(log.String(), all); x != "" {
		t.Errorf("the daemon's log shows the private key (%q):\n%s", x, log)
	}
}

// The search box posts its query: what was typed stays out of the
// browser's history and the address bar.
func TestTheSearchBoxPosts(t *testing.T) {
	base, _ := privateKeyServer(t, server.Options{})
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `<form action="/search" method="post" role="search">`) {
		t.Errorf("the search box does not post:\n%s", body)
	}
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
