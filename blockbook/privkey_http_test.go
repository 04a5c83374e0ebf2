package blockbook_test

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/internal/privkeytest"
	"github.com/utxostore/utxostore/server"
)

// TestTheAPIRefusesAnExtendedPrivateKeyWithoutEchoingIt: a wallet's user
// who sends an xprv or zprv, or a private key as WIF, where the API takes an xpub or an address (or
// anything else) is answered 400 with the refusal, and neither the answer
// nor the daemon's log shows the key, or its private key in another form.
// The routes used to answer "Invalid xpub "xprv…"" and "Invalid address,
// "zprv…" is neither…", quoting the key's first 80 digits.
func TestTheAPIRefusesAnExtendedPrivateKeyWithoutEchoingIt(t *testing.T) {
	base, log := privkeytest.Daemon(t, server.Options{})
	xprv, xprvSecrets := privkeytest.Key(t, nil)
	zprv, zprvSecrets := privkeytest.Key(t, privkeytest.ZprvVersion)
	wif, wifSecrets := privkeytest.WIF(t)
	for _, k := range []struct {
		key     string
		secrets []string
	}{{xprv, xprvSecrets}, {zprv, zprvSecrets}, {wif, wifSecrets}} {
		key, secrets := k.key, k.secrets
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
			if x := privkeytest.Leaked(string(body), secrets); x != "" {
				t.Errorf("GET %s shows the private key (%q): %s", what, x, body)
			}
			if x := privkeytest.Leaked(strings.Join(resp.Header.Values("Location"), " "), secrets); x != "" {
				t.Errorf("GET %s redirects to the private key (%q)", what, x)
			}
			if resp.StatusCode != http.StatusBadRequest || answer.Error != blockbook.PrivateKeyRefusal {
				t.Errorf("GET %s: HTTP %d %q, want 400 %q", what, resp.StatusCode, answer.Error, blockbook.PrivateKeyRefusal)
			}
		}
	}
	if x := privkeytest.Leaked(log.String(), allSecrets(t)); x != "" {
		t.Errorf("the daemon's log shows the private key (%q):\n%s", x, log)
	}
}

// TestTheWebsocketRefusesAnExtendedPrivateKeyWithoutEchoingIt: the
// websocket's methods that take an xpub or addresses, and any method,
// refuse an extended private key with the refusal and without the key.
func TestTheWebsocketRefusesAnExtendedPrivateKeyWithoutEchoingIt(t *testing.T) {
	base, log := privkeytest.Daemon(t, server.Options{})
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+blockbook.WebsocketPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, version := range [][]byte{nil, privkeytest.ZprvVersion} {
		key, secrets := privkeytest.Key(t, version)
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
			if x := privkeytest.Leaked(string(msg), secrets); x != "" {
				t.Errorf("request %d shows the private key (%q): %s", i+1, x, msg)
			}
			if answer.Data.Error.Message != blockbook.PrivateKeyRefusal {
				t.Errorf("request %d is answered %s, want the refusal", i+1, msg)
			}
		}
	}
	if x := privkeytest.Leaked(log.String(), allSecrets(t)); x != "" {
		t.Errorf("the daemon's log shows the private key (%q):\n%s", x, log)
	}
}

// TestTheTokensRefusalDoesNotEchoAnExtendedPrivateKey: the 401 of a
// daemon with --token named the path it refused, and so the key in
// /api/v2/xpub/<xprv>.
func TestTheTokensRefusalDoesNotEchoAnExtendedPrivateKey(t *testing.T) {
	base, log := privkeytest.Daemon(t, server.Options{Token: "s3cret"})
	key, secrets := privkeytest.Key(t, nil)
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
		if x := privkeytest.Leaked(string(body), secrets); x != "" {
			t.Errorf("GET %s without the token shows the private key (%q): %s", what, x, body)
		}
	}
	if x := privkeytest.Leaked(log.String(), secrets); x != "" {
		t.Errorf("the daemon's log shows the private key (%q):\n%s", x, log)
	}
}

// allSecrets are the secrets of every test key.
func allSecrets(t *testing.T) []string {
	_, a := privkeytest.Key(t, nil)
	_, b := privkeytest.Key(t, privkeytest.ZprvVersion)
	return append(a, b...)
}
