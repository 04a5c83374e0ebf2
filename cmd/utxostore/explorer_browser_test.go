package main

import (
	"bufio"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/chromedp/chromedp"
)

// The explorer's browser tests drive Debian's Chromium, headless, through
// the DevTools protocol (chromedp). With UTXOSTORE_SCREENSHOTS=DIR they
// write a screenshot of each page they check to DIR, for a reviewer.

// browser is one headless Chromium tab on a daemon's explorer.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	// shots is the screenshots' directory, "" for none; prefix names them.
	shots, prefix string

	mu sync.Mutex
	// console is what the pages wrote to the console at error level
	// (errors, uncaught exceptions, failed loads), not yet checked.
	console []string
}

// chromiumPath finds Debian's Chromium (scripts/test.sh installs it), or
// skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("skipping: no chromium on PATH (scripts/test.sh installs Debian's: apt-get install chromium)")
	return ""
}

// newBrowser starts Chromium on the explorer at base.
func newBrowser(t *testing.T, base, prefix string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox,
		chromedp.WindowSize(1200, 900))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, base: base, shots: os.Getenv("UTXOSTORE_SCREENSHOTS"), prefix: prefix}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.console = append(b.console, m.URL+": "+m.String())
				b.mu.Unlock()
			}
		}
	}()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return b
}

// open loads path and expects the HTTP status want.
func (b *browser) open(path string, want int64) {
	b.t.Helper()
	resp, err := chromedp.Run(b.ctx, chromedp.NavigateResponse(b.base+path))
	if err != nil {
		b.t.Fatalf("opening %s: %v", path, err)
	}
	if resp == nil {
		b.t.Fatalf("opening %s: no response (a move within the page?)", path)
	}
	if resp.Status != want {
		b.t.Fatalf("opening %s: status %d, want %d", path, resp.Status, want)
	}
}

// do runs actions that change the page (a click, a search) and waits for
// sel on the page they lead to.
func (b *browser) do(sel string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, append(actions, chromedp.WaitVisible(chromedp.CSS(sel)))...); err != nil {
		b.t.Fatalf("waiting for %s: %v", sel, err)
	}
}

// text is the text of the first element sel finds.
func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// location is the page's URL, without the base.
func (b *browser) location() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.TrimPrefix(loc, b.base)
}

// eval evaluates a JavaScript expression of a string value.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return s
}

// noConsoleErrors fails when a page wrote an error to the console since
// the last check; what must fail to load (a refused request) says so
// with expected.
func (b *browser) noConsoleErrors(what string, expected ...string) {
	b.t.Helper()
	b.mu.Lock()
	msgs := b.console
	b.console = nil
	b.mu.Unlock()
next:
	for _, m := range msgs {
		for _, e := range expected {
			if strings.Contains(m, e) {
				continue next
			}
		}
		b.t.Errorf("%s: console error: %s", what, m)
	}
}

// screenshot writes the page to the screenshots' directory as NAME.png.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot of %s: %v", name, err)
	}
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, b.prefix+name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// check opens path, expects its text to hold each of wants, no console
// error, and takes its screenshot.
func (b *browser) check(name, path string, wants ...string) {
	b.t.Helper()
	b.open(path, 200)
	b.waitContent(name, wants...)
}

func (b *browser) waitContent(name string, wants ...string) {
	b.t.Helper()
	body := b.text("#content")
	for _, w := range wants {
		if !strings.Contains(body, w) {
			b.t.Errorf("%s (%s): want %q in the page:\n%s", name, b.location(), w, body)
		}
	}
	b.noConsoleErrors(name)
	b.screenshot(name)
}

// search types q in the search box and submits it.
func (b *browser) search(q, waitFor string) {
	b.t.Helper()
	b.do(waitFor, chromedp.SetValue(chromedp.CSS(`input[name=q]`), q), chromedp.Submit(chromedp.CSS(`form[role=search]`)))
}

// TestExplorerInABrowser serves the first 2,000 blocks of the mainnet
// file with --index (with -long, all of them but the last) and drives the
// explorer in Chromium: every page type loads without a console error;
// the search box finds a height, a block hash, a txid and an address;
// links lead from a block to a transaction to its spender; the next
// block, connected during the test, appears on / without a reload; and
// hostile paths and queries come back escaped or refused.
func TestExplorerInABrowser(t *testing.T) {
	chromiumPath(t)
	tip := 2000 // the first block connected during the test
	if *long {
		tip = 14131
	}
	data := filepath.Join(t.TempDir(), "data")
	lastLine(t, "import", "--index", "--data", data, "--sync", "block", "--quiet", chainPrefix(t, tip))
	d := startDaemon(t, "serve", "--index", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	b := newBrowser(t, "http://"+d.http, "mainnet-")

	b.check("home", "/", "Bitcoin · mainnet", strconv.Itoa(tip-1), "Latest blocks", "Address index")
	// The script subscribes to new blocks; the page is marked so that a
	// reload would show.
	b.do(`body[data-live="yes"]`)
	b.eval(`window.stillTheSamePage = "yes"`)
	if _, stderr, err := run(t, "import", "--server", d.grpc, "--start-height", strconv.Itoa(tip), "--quiet", chainRange(t, tip, tip+1)); err != nil {
		t.Fatalf("connecting block %d: %v\n%s", tip, err, stderr)
	}
	b.do(`#blocks a[href="/block/` + strconv.Itoa(tip) + `"]`)
	if got := b.eval(`window.stillTheSamePage || "reloaded"`); got != "yes" {
		t.Fatalf("the new block appeared by a reload of /, not in place: %s", got)
	}
	if got := b.text("#tip-height"); got != strconv.Itoa(tip) {
		t.Fatalf("the tip on / after block %d arrived: %q", tip, got)
	}
	b.noConsoleErrors("/ as a new block arrives")

	// Search: a height, a txid, an address.
	b.search("170", `h1`)
	if loc := b.location(); loc != "/block/170" {
		t.Fatalf("searching 170 led to %s", loc)
	}
	b.waitContent("block", "Block 170", "00000000d1145790a8694403d4063f323d499e655c83426834d4ce2f8dd4a2ee", "f4184fc5")
	const block181 = "00000000dc55860c8a29c58d45209318fa9e9dc2c1833a7226d86bc465afc6e5"
	b.search(block181, `h1`)
	if loc := b.location(); loc != "/block/"+block181 {
		t.Fatalf("searching a block hash led to %s", loc)
	}
	const hal = "f4184fc596403b9d638783cf57adfe4c75c605f6356fbc91338530e9831e9e16"
	b.search(hal, `#outputs`)
	if loc := b.location(); loc != "/tx/"+hal {
		t.Fatalf("searching a txid led to %s", loc)
	}
	b.search("1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", `#balance`)
	if loc := b.location(); loc != "/address/1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa" {
		t.Fatalf("searching an address led to %s", loc)
	}
	b.waitContent("address", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "4a5e1e4b")
	if bal := b.text("#balance"); bal != "50 BTC" {
		t.Fatalf("the genesis address's balance: %q", bal)
	}

	// Links: block 170 → its second transaction → the spender of output 1.
	b.open("/block/170", 200)
	b.do(`#outputs`, chromedp.Click(chromedp.CSS(`a[href="/tx/`+hal+`"]`)))
	b.waitContent("tx", "Record in the store", "Mined in", "block 170", "10 BTC", "40 BTC", "1Q2TWHE3GMdB6BZKafqwxXtWAWgFt5Jvm3")
	if out0 := b.text("#output-0"); !strings.Contains(out0, "unspent") {
		t.Errorf("output 0 of %s: %q, want unspent", hal, out0)
	}
	if out1 := b.text("#output-1"); !strings.Contains(out1, "spent") || !strings.Contains(out1, "a16f3ce4") {
		t.Errorf("output 1 of %s: %q, want spent by a16f3ce4…", hal, out1)
	}
	if b.shots != "" {
		b.do(`#outputs`, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		b.screenshot("tx-phone")
		b.do(`#outputs`, chromedp.EmulateViewport(1200, 900))
	}
	b.do(`#inputs`, chromedp.Click(chromedp.CSS(`#output-1 a.spender`)))
	const spender = "a16f3ce4dd5deb92d98ef5cf8afeaf0775ebca408f708b2146c4fb42b41e14be"
	if loc := b.location(); loc != "/tx/"+spender+"#input-0" {
		t.Fatalf("the spender's link led to %s", loc)
	}
	if in0 := b.text("#input-0"); !strings.Contains(in0, "f4184fc5") {
		t.Fatalf("input 0 of the spender: %q", in0)
	}
	b.noConsoleErrors("the spender")

	// An xpub (nobody's: the page shows an account with no history) and
	// the mempool.
	key, err := hdkeychain.NewMaster(make([]byte, 32), &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	xpub, err := key.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	b.check("xpub", "/xpub/"+xpub.String(), "Xpub", xpub.String(), "0 BTC", "Used addresses")
	b.check("mempool", "/mempool", "Mempool", "0 transactions")

	// Hostile input: a script in a search comes back as text, and a 10 KB
	// txid is refused.
	b.eval(`window.pwned = "no"`)
	b.open("/search?q="+url.QueryEscape(`<script>window.pwned="yes"</script>`), 400)
	if got := b.eval(`window.pwned || "no"`); got != "no" {
		t.Fatal("a script in the search ran")
	}
	if got := b.text(".error"); !strings.Contains(got, `<script>window.pwned=`) {
		t.Fatalf("the search's text is not shown as text: %q", got)
	}
	b.screenshot("hostile-search")
	b.open("/tx/"+strings.Repeat("a", 10_000), 400)
	if got := b.text(".error"); !strings.Contains(got, "a txid of 10000 characters is none") {
		t.Fatalf("a 10 KB txid: %q", got)
	}
	b.open("/block/%3Cimg%20src=x%20onerror=alert(1)%3E", 400)
	if got := b.text(".error"); !strings.Contains(got, "<img src=x onerror=alert(1)>") {
		t.Fatalf("a hostile block id: %q", got)
	}
	b.noConsoleErrors("the refused pages", "status of 400")
	d.stop(t, syscall.SIGTERM)
}

// demoDaemon runs `utxostore demo` with args and returns it with what it
// printed before "Ctrl-C stops it.".
func demoDaemon(t *testing.T, args ...string) (*daemon, []string) {
	t.Helper()
	cmd := exec.Command(utxostoreBin, append([]string{"demo"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	printed := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if sc.Text() == "Ctrl-C stops it." {
				printed <- lines
			}
		}
		close(printed)
	}()
	d := startDaemonCmd(t, cmd, args)
	select {
	case lines, ok := <-printed:
		if !ok {
			t.Fatalf("demo ended its output without \"Ctrl-C stops it.\":\n%s", d.log())
		}
		return d, lines
	case <-time.After(60 * time.Second):
		t.Fatalf("demo printed no URLs within 60s:\n%s", d.log())
	}
	return nil, nil
}

// demoURL is the path of the URL the demo printed with comment.
func demoURL(t *testing.T, lines []string, base, comment string) string {
	t.Helper()
	for _, l := range lines {
		if strings.HasSuffix(l, "# "+comment) {
			return strings.TrimPrefix(strings.Fields(l)[0], base)
		}
	}
	t.Fatalf("demo printed no URL of %q:\n%s", comment, strings.Join(lines, "\n"))
	return ""
}

// TestExplorerOnTheDemo: `demo --index` prints the explorer's URL first,
// and the explorer shows, in Chromium, each state of its chain's story: a
// frozen output, a reassigned one, an unmined transaction in the mempool
// and a conflicting double spend of it, on regtest, after a
// reorganisation; its search finds an address of the chain.
func TestExplorerOnTheDemo(t *testing.T) {
	chromiumPath(t)
	d, lines := demoDaemon(t, "--index", "--blocks", "130", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	base := "http://" + d.http
	if want := "Block explorer: " + base + "/"; len(lines) == 0 || lines[0] != want {
		t.Fatalf("demo's first line: want %q, got:\n%s", want, strings.Join(lines, "\n"))
	}
	b := newBrowser(t, base, "demo-")
	b.check("home", "/", "Regtest · regtest", "129", "Latest blocks", "1 unmined transactions")

	frozen := demoURL(t, lines, base, "a frozen output")
	b.check("frozen", frozen, "Record in the store", "frozen")
	if out := b.text("#output-" + frozen[strings.LastIndex(frozen, "-")+1:]); !strings.Contains(out, "frozen") {
		t.Errorf("the frozen output: %q", out)
	}
	reassigned := demoURL(t, lines, base, "a frozen output reassigned to another script")
	page, vout, _ := strings.Cut(reassigned, "#")
	b.open(page, 200) // without the fragment: a page of its own, when the frozen output's is the same
	if out := b.text("#" + vout); !strings.Contains(out, "reassigned") || !strings.Contains(out, "spendable above block") {
		t.Errorf("the reassigned output: %q", out)
	}
	unmined := demoURL(t, lines, base, "an unmined transaction")
	b.check("unmined", unmined, "unmined since height 130")
	conflicting := demoURL(t, lines, base, "a double spend of it, kept as conflicting")
	b.check("conflicting", conflicting, "conflicting", "Delete at height")
	b.check("mempool", "/mempool", "1 transactions", strings.TrimPrefix(unmined, "/tx/")[:8])
	b.check("reorganised-block", demoURL(t, lines, base, "mined after a stale twin of it was reorganised away"), "Block 128")

	// The address of the unmined transaction's input, found by the search.
	b.open(unmined, 200)
	addr := b.text("#input-0 a[href^='/address/']")
	b.search(addr, `#balance`)
	if loc := b.location(); loc != "/address/"+addr {
		t.Fatalf("searching %s led to %s", addr, loc)
	}
	b.waitContent("address", addr, "Unconfirmed")
	d.stop(t, syscall.SIGTERM)
}

// TestExplorerTokenRules: the explorer's pages need the daemon's token as
// /api does, and --http-public serves them without it; without --index,
// they say what they lack and how to get it.
func TestExplorerTokenRules(t *testing.T) {
	const token = "explorer-secret"
	for _, public := range []bool{false, true} {
		args := []string{"serve", "--create", "--data", t.TempDir(), "--token", token, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}
		if public {
			args = append(args, "--http-public")
		}
		d := startDaemon(t, args...)
		for _, path := range []string{"/", "/mempool", "/block/0", "/static/explorer.css", "/api/v2"} {
			code, body := httpGet(t, "http://"+d.http+path)
			switch {
			case public && path == "/block/0":
				if code != 400 || !strings.Contains(body, "above the tip") {
					t.Errorf("%s of an empty store with --http-public: %d %s", path, code, body)
				}
			case public && code != 200:
				t.Errorf("%s with --http-public: %d %s", path, code, body)
			case !public && (code != 401 || !strings.Contains(body, "Authorization: Bearer")):
				t.Errorf("%s without the token: %d %s", path, code, body)
			}
			if code, body := httpGetToken(t, "http://"+d.http+path, token); code != 200 && path != "/block/0" {
				t.Errorf("%s with the token: %d %s", path, code, body)
			}
		}
		_, home := httpGetToken(t, "http://"+d.http+"/", token)
		mustContain(t, "/ with the token", home, "<title>utxostore explorer", "The store holds no block yet.",
			"The address index is off", "utxostore serve --index")
		// Without --index, an address's page says what it needs.
		code, body := httpGetToken(t, "http://"+d.http+"/address/1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", token)
		if code != 404 {
			t.Errorf("an address without --index: %d", code)
		}
		mustContain(t, "an address without --index", body, "needs the address index", "utxostore serve --index")
		d.stop(t, syscall.SIGTERM)
	}
}
