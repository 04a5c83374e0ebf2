// Package btcdtest runs real btcd nodes on simnet for tests: each on free
// loopback ports in a temporary directory, mining to a key the test holds,
// with an RPC client and a small wallet that builds and signs
// transactions. Tests that need it skip with a message when btcd is not
// installed and cannot be (go install github.com/btcsuite/btcd@v0.24.2).
package btcdtest

import (
	"bytes"
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

// Version is the btcd release the tests run.
const Version = "v0.24.2"

var (
	findOnce sync.Once
	binary   string
	findErr  error
)

// Binary returns the path of btcd, installing it from the Go module proxy
// when it is neither on PATH nor in $(go env GOPATH)/bin. It skips the test
// when neither works.
func Binary(t testing.TB) string {
	t.Helper()
	findOnce.Do(func() { binary, findErr = find() })
	if findErr != nil {
		t.Skipf("btcd is not installed and could not be (go install github.com/btcsuite/btcd@%s): %v", Version, findErr)
	}
	return binary
}

func find() (string, error) {
	if path, err := exec.LookPath("btcd"); err == nil {
		return path, nil
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return "", err
	}
	path := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "btcd")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if out, err := exec.Command("go", "install", "github.com/btcsuite/btcd@"+Version).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	return path, nil
}

// Params are simnet's.
var Params = &chaincfg.SimNetParams

// Node is a running btcd on simnet.
type Node struct {
	// P2P is the node's P2P address on loopback.
	P2P string
	RPC *rpcclient.Client
	dir string
	bin string
	rpc string
	cmd *exec.Cmd
	out *bytes.Buffer

	mining  btcutil.Address
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
	n := &Node{bin: Binary(t), dir: t.TempDir(), P2P: freePort(t), rpc: freePort(t), mining: miningAddr}
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
	n.cmd = exec.Command(n.bin, "--simnet",
		"--datadir="+filepath.Join(n.dir, "data"), "--logdir="+filepath.Join(n.dir, "logs"),
		"--listen="+n.P2P, "--rpclisten="+n.rpc, "--rpcuser=test", "--rpcpass=test", "--notls",
		"--miningaddr="+n.mining.EncodeAddress(), "--trickleinterval=50ms", "--nobanning",
		"--debuglevel=info")
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("starting btcd: %v", err)
	}
	exited := n.exited
	go func() { exited <- n.cmd.Wait() }()
	WaitFor(t, 60*time.Second, "btcd to answer RPC", func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("btcd exited (%v):\n%s", err, n.out.String())
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

// Tip returns the node's best block.
func (n *Node) Tip(t testing.TB) (chainhash.Hash, int32) {
	t.Helper()
	hash, height, err := n.RPC.GetBestBlock()
	if err != nil {
		t.Fatalf("getbestblock: %v", err)
	}
	return *hash, height
}

// Connect makes the node connect to other (a temporary connection).
func (n *Node) Connect(t testing.TB, other *Node) {
	t.Helper()
	temp := "temp"
	if err := n.RPC.Node(btcjson.NConnect, other.P2P, &temp); err != nil {
		t.Fatalf("node connect: %v", err)
	}
}

// Disconnect drops the node's connection to other and waits until neither
// lists a btcd peer (a follower may stay connected).
func (n *Node) Disconnect(t testing.TB, other *Node) {
	t.Helper()
	if err := n.RPC.Node(btcjson.NDisconnect, other.P2P, nil); err != nil {
		t.Fatalf("node disconnect: %v", err)
	}
	WaitFor(t, 30*time.Second, "the nodes to disconnect", func() (bool, string) {
		a, b := n.btcdPeers(), other.btcdPeers()
		return a == 0 && b == 0, fmt.Sprintf("%d and %d btcd peers", a, b)
	})
}

// btcdPeers counts the node's peers that are btcd nodes (-1 when the RPC
// fails).
func (n *Node) btcdPeers() int {
	peers, err := n.RPC.GetPeerInfo()
	if err != nil {
		return -1
	}
	count := 0
	for _, p := range peers {
		if strings.Contains(p.SubVer, "btcd") {
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

// Key is a wallet key with its simnet P2PKH address.
type Key struct {
	Priv     *btcec.PrivateKey
	Addr     btcutil.Address
	PkScript []byte
}

// ErrNoCoins is returned when the wallet has no mature coin left.
var ErrNoCoins = errors.New("btcdtest: no mature coins")
