// Package btcdtest runs real nodes for tests: btcd on simnet (and on
// regtest), and bchd
// (btcd's Bitcoin Cash fork) on regtest, each on free loopback ports in a
// temporary directory, mining to a key the test holds, with an RPC client
// (bchd answers btcd's RPC client: same commands, same block encoding) and
// a small wallet that builds and signs transactions, with Bitcoin Cash's
// signatures (SIGHASH_FORKID) for bchd. Tests that need a node skip with a
// message when it is not installed and cannot be (btcd: go install
// github.com/btcsuite/btcd@v0.24.2; bchd: go install
// github.com/gcash/bchd@v0.22.2).
package btcdtest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire"
)

// Kind is a node a test runs.
type Kind struct {
	// Name is its binary's.
	Name string
	// Module and Version are what installs it.
	Module, Version string
	// Network is its network as a store names it.
	Network string
	// Params are btcd's parameters of the network: its addresses and
	// coinbase maturity.
	Params *chaincfg.Params
	// flags choose the network.
	flags []string
	// forkID: signatures commit to the amount spent (SIGHASH_FORKID),
	// as Bitcoin Cash's must.
	forkID bool

	findOnce sync.Once
	binary   string
	findErr  error
}

// The nodes.
var (
	Btcd = &Kind{Name: "btcd", Module: "github.com/btcsuite/btcd", Version: "v0.24.2", Network: "simnet",
		Params: &chaincfg.SimNetParams, flags: []string{"--simnet"}}
	// BtcdRegtest is btcd on regtest, whose genesis block is Bitcoin
	// Core's regtest one: the network wallets speak of as "regtest".
	BtcdRegtest = &Kind{Name: "btcd", Module: "github.com/btcsuite/btcd", Version: "v0.24.2", Network: "regtest",
		Params: &chaincfg.RegressionNetParams, flags: []string{"--regtest"}}
	Bchd = &Kind{Name: "bchd", Module: "github.com/gcash/bchd", Version: "v0.22.2", Network: "bch-regtest",
		Params: &chaincfg.RegressionNetParams, flags: []string{"--regtest"}, forkID: true}
)

// Version is the btcd release the tests run.
const Version = "v0.24.2"

// Binary returns the path of btcd (Btcd.Binary).
func Binary(t testing.TB) string { return Btcd.Binary(t) }

// Binary returns the path of the node's binary, installing it from the Go
// module proxy when it is neither on PATH nor in $(go env GOPATH)/bin. It
// skips the test when neither works.
func (k *Kind) Binary(t testing.TB) string {
	t.Helper()
	k.findOnce.Do(func() { k.binary, k.findErr = k.find() })
	if k.findErr != nil {
		t.Skipf("%s is not installed and could not be (go install %s@%s): %v", k.Name, k.Module, k.Version, k.findErr)
	}
	return k.binary
}

func (k *Kind) find() (string, error) {
	if path, err := exec.LookPath(k.Name); err == nil {
		return path, nil
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return "", err
	}
	path := filepath.Join(strings.TrimSpace(string(gopath)), "bin", k.Name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if out, err := exec.Command("go", "install", k.Module+"@"+k.Version).CombinedOutput(); err != nil {
		// go install MODULE@VERSION reads the module's version list (for
		// its deprecation), which some proxies refuse; installing from a
		// module that requires it reads none.
		if out2, err2 := installFromModule(k.Module, k.Version); err2 != nil {
			return "", fmt.Errorf("%v: %s; from a module: %v: %s", err, out, err2, out2)
		}
	}
	return path, nil
}

// installFromModule installs the main package of module at version from a
// temporary module that requires it.
func installFromModule(module, version string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "install-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, args := range [][]string{{"mod", "init", "install"}, {"get", module + "@" + version}, {"install", module}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return out, err
		}
	}
	return nil, nil
}

// Params are simnet's, btcd's network.
var Params = Btcd.Params

// Node is a running node.
type Node struct {
	Kind *Kind
	// P2P is the node's P2P address on loopback.
	P2P string
	RPC *rpcclient.Client
	dir string
	bin string
	rpc string
	cmd *exec.Cmd
	out *bytes.Buffer

	mining  string
	stopped bool
	exited  chan error
}

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Start runs a btcd node that mines to miningAddr; it is stopped when the
// test ends.
func Start(t testing.TB, miningAddr btcutil.Address) *Node {
	t.Helper()
	return Btcd.start(t, miningAddr.EncodeAddress())
}

// StartMiningTo runs a node that mines to addr; it is stopped when the
// test ends.
func (k *Kind) StartMiningTo(t testing.TB, addr string) *Node {
	t.Helper()
	return k.start(t, addr)
}

// Start runs a node that mines to the wallet's key; it is stopped when the
// test ends.
func (k *Kind) Start(t testing.TB, w *Wallet) *Node {
	t.Helper()
	return k.start(t, w.miningAddr)
}

func (k *Kind) start(t testing.TB, miningAddr string) *Node {
	t.Helper()
	n := &Node{Kind: k, bin: k.Binary(t), dir: t.TempDir(), P2P: freePort(t), rpc: freePort(t), mining: miningAddr}
	client, err := rpcclient.New(&rpcclient.ConnConfig{Host: n.rpc, User: "test", Pass: "test", HTTPPostMode: true, DisableTLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.RPC = client
	t.Cleanup(func() { n.Stop(); client.Shutdown() })
	n.launch(t)
	return n
}

// launch starts the btcd process and waits until it answers RPC.
func (n *Node) launch(t testing.TB) {
	t.Helper()
	n.out, n.exited, n.stopped = &bytes.Buffer{}, make(chan error, 1), false
	n.cmd = exec.Command(n.bin, append(n.Kind.flags,
		"--datadir="+filepath.Join(n.dir, "data"), "--logdir="+filepath.Join(n.dir, "logs"),
		"--listen="+n.P2P, "--rpclisten="+n.rpc, "--rpcuser=test", "--rpcpass=test", "--notls",
		"--miningaddr="+n.mining, "--trickleinterval=50ms", "--nobanning",
		"--debuglevel=info")...)
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", n.Kind.Name, err)
	}
	exited := n.exited
	go func() { exited <- n.cmd.Wait() }()
	WaitFor(t, 60*time.Second, n.Kind.Name+" to answer RPC", func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s exited (%v):\n%s", n.Kind.Name, err, n.out.String())
		default:
		}
		_, err := n.RPC.GetBlockCount()
		return err == nil, fmt.Sprint(err)
	})
}

// Stop stops the node (SIGINT, then SIGKILL after 30 s) and waits for it.
func (n *Node) Stop() {
	if n.stopped || n.cmd == nil {
		return
	}
	n.stopped = true
	_ = n.cmd.Process.Signal(os.Interrupt)
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
}

// Restart stops the node and starts it again on its data and ports: its
// chain survives, its mempool (btcd keeps none on disk) does not.
func (n *Node) Restart(t testing.TB) {
	t.Helper()
	n.Stop()
	n.launch(t)
}

// Generate mines count blocks and returns their hashes.
func (n *Node) Generate(t testing.TB, count int) []*chainhash.Hash {
	t.Helper()
	var hashes []*chainhash.Hash
	for len(hashes) < count { // in steps, so no RPC call runs long
		step := min(count-len(hashes), 100)
		got, err := n.RPC.Generate(uint32(step))
		if err != nil {
			t.Fatalf("generate: %v", err)
		}
		hashes = append(hashes, got...)
	}
	return hashes
}

// Send sends the transaction to the node's mempool. It is sent with the
// raw hex alone: btcd's client adds a fee rate as a number, which bchd,
// keeping btcd's older allowhighfees flag, refuses.
func (n *Node) Send(t testing.TB, tx *wire.MsgTx) {
	t.Helper()
	var raw bytes.Buffer
	if err := tx.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	param, err := json.Marshal(hex.EncodeToString(raw.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.RPC.RawRequest("sendrawtransaction", []json.RawMessage{param}); err != nil {
		t.Fatalf("sendrawtransaction %s: %v", tx.TxHash(), err)
	}
}

// Tip returns the node's best block.
func (n *Node) Tip(t testing.TB) (chainhash.Hash, int32) {
	t.Helper()
	hash, height, err := n.RPC.GetBestBlock()
	if err != nil {
		t.Fatalf("getbestblock: %v", err)
	}
	return *hash, height
}

// Connect makes the node connect to other (a temporary connection) and
// waits until it is up. A node already connected to other is left as it
// is: a second connection would outlive a Disconnect, which drops one.
func (n *Node) Connect(t testing.TB, other *Node) {
	t.Helper()
	if n.connectionsTo(other) > 0 {
		return
	}
	temp := "temp"
	if err := n.RPC.Node(btcjson.NConnect, other.P2P, &temp); err != nil {
		t.Fatalf("node connect: %v", err)
	}
	WaitFor(t, 30*time.Second, "the nodes to connect", func() (bool, string) {
		c := n.connectionsTo(other)
		return c > 0, fmt.Sprintf("%d connections", c)
	})
}

// Disconnect drops the node's connections to other and waits until neither
// lists a peer of its kind (a follower may stay connected). btcd drops one
// connection to an address per request, so it asks again while one is left.
func (n *Node) Disconnect(t testing.TB, other *Node) {
	t.Helper()
	if err := n.RPC.Node(btcjson.NDisconnect, other.P2P, nil); err != nil {
		t.Fatalf("node disconnect: %v", err)
	}
	WaitFor(t, 30*time.Second, "the nodes to disconnect", func() (bool, string) {
		if n.connectionsTo(other) > 0 {
			_ = n.RPC.Node(btcjson.NDisconnect, other.P2P, nil) // one may have come up since; an error means none is left
		}
		a, b := n.nodePeers(), other.nodePeers()
		return a == 0 && b == 0, fmt.Sprintf("%d and %d %s peers", a, b, n.Kind.Name)
	})
}

// connectionsTo counts the node's connections to other's P2P address (-1
// when the RPC fails).
func (n *Node) connectionsTo(other *Node) int {
	peers, err := n.RPC.GetPeerInfo()
	if err != nil {
		return -1
	}
	count := 0
	for _, p := range peers {
		if p.Addr == other.P2P {
			count++
		}
	}
	return count
}

// nodePeers counts the node's peers that are nodes of its kind (-1 when
// the RPC fails).
func (n *Node) nodePeers() int {
	peers, err := n.RPC.GetPeerInfo()
	if err != nil {
		return -1
	}
	count := 0
	for _, p := range peers {
		if strings.Contains(p.SubVer, n.Kind.Name) {
			count++
		}
	}
	return count
}

// Block returns a block and its serialisation.
func (n *Node) Block(t testing.TB, hash *chainhash.Hash) (*wire.MsgBlock, []byte) {
	t.Helper()
	b, err := n.RPC.GetBlock(hash)
	if err != nil {
		t.Fatalf("getblock %s: %v", hash, err)
	}
	var buf bytes.Buffer
	if err := b.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	return b, buf.Bytes()
}

// WriteChain writes the node's best chain, genesis to tip, as raw block
// files (one block each, as a node's RPC serves them) into dir, and
// returns their paths in height order. Files are named by height and
// hash, so a later call fetches only the blocks it lacks.
func (n *Node) WriteChain(t testing.TB, dir string) []string {
	t.Helper()
	_, tip := n.Tip(t)
	paths := make([]string, 0, tip+1)
	for h := int32(0); h <= tip; h++ {
		hash, err := n.RPC.GetBlockHash(int64(h))
		if err != nil {
			t.Fatalf("getblockhash %d: %v", h, err)
		}
		path := filepath.Join(dir, fmt.Sprintf("%06d-%s.block", h, hash))
		paths = append(paths, path)
		if _, err := os.Stat(path); err == nil {
			continue // fetched for an earlier call
		}
		_, raw := n.Block(t, hash)
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// WaitFor polls cond until it holds, failing the test with cond's last
// word when deadline passes first.
func WaitFor(t testing.TB, deadline time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("timed out after %s waiting for %s: %s", deadline, what, last)
		}
		time.Sleep(20 * time.Millisecond) // a polling interval, not a synchronisation
	}
}

// Key is a wallet key with its P2PKH address.
type Key struct {
	Priv     *btcec.PrivateKey
	Addr     btcutil.Address
	PkScript []byte
}

// ErrNoCoins is returned when the wallet has no mature coin left.
var ErrNoCoins = errors.New("btcdtest: no mature coins")
