package explorer_test

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/internal/privkeytest"
	"github.com/utxostore/utxostore/server"
)

// TestTheExplorerRefusesAnExtendedPrivateKeyWithoutEchoingIt: a wallet's
// user who pastes an xprv or zprv into the search box, or opens a page
// with one in its path, is answered 400 with the refusal: no redirect
// (which put the key in /address/<key>), and neither the page (its
// message, title and search box) nor the daemon's log shows the key, or
// its private key in another form.
func TestTheExplorerRefusesAnExtendedPrivateKeyWithoutEchoingIt(t *testing.T) {
	base, log := privkeytest.Daemon(t, server.Options{})
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var all []string
	for _, version := range [][]byte{nil, {0x04, 0xb2, 0x43, 0x0c}} {
		key, secrets := privkeytest.Key(t, version)
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
			if x := privkeytest.Leaked(page, secrets); x != "" {
				t.Errorf("%s shows the private key (%q):\n%s", what, x, page)
			}
			if loc := resp.Header.Get("Location"); loc != "" {
				t.Errorf("%s redirects (to %q), want a refusal", what, loc)
				if x := privkeytest.Leaked(loc, secrets); x != "" {
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
		xprv, _ := privkeytest.Key(t, nil)
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
	if x := privkeytest.Leaked(log.String(), all); x != "" {
		t.Errorf("the daemon's log shows the private key (%q):\n%s", x, log)
	}
}

// The search box posts its query: what was typed stays out of the
// browser's history and the address bar.
func TestTheSearchBoxPosts(t *testing.T) {
	base, _ := privkeytest.Daemon(t, server.Options{})
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
