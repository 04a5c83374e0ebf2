package redis

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
)

// The tests run against real servers: the cluster named by
// UTXOSTORE_REDIS_ADDRS (and the plain server UTXOSTORE_REDIS_SINGLE_ADDR),
// or else the local ones scripts/redis-cluster.sh starts. The script is
// idempotent and the nodes are left running for the next run; `.ci/run`
// and `scripts/redis-cluster.sh stop` stop them.
var (
	clusterAddrs []string
	singleAddr   string
	// managed: the nodes are the script's, on this machine, so the
	// failover test may kill one and start it again.
	managed    bool
	skipReason string
	scriptPath string
	runID      = strconv.FormatInt(time.Now().UnixNano(), 36)
)

func TestMain(m *testing.M) {
	flag.Parse()
	if err := setUp(); err != nil {
		fmt.Fprintln(os.Stderr, "engine/redis:", err)
		os.Exit(1)
	}
	if skipReason != "" {
		fmt.Fprintln(os.Stderr, "engine/redis: SKIPPING every test:", skipReason)
	}
	os.Exit(m.Run())
}

func setUp() error {
	if env := os.Getenv("UTXOSTORE_REDIS_ADDRS"); env != "" {
		clusterAddrs = strings.Split(env, ",")
		singleAddr = os.Getenv("UTXOSTORE_REDIS_SINGLE_ADDR")
		return nil
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	scriptPath = filepath.Join(root, "scripts", "redis-cluster.sh")
	out, err := runScript("start")
	if err != nil {
		if _, lookErr := exec.LookPath("redis-server"); lookErr != nil {
			skipReason = "redis-server is not installed and could not be installed: " + err.Error()
			return nil
		}
		return err
	}
	clusterAddrs = strings.Split(out, ",")
	if singleAddr, err = runScript("single"); err != nil {
		return err
	}
	managed = true
	return nil
}

// runScript runs scripts/redis-cluster.sh and returns its last line.
func runScript(args ...string) (string, error) {
	cmd := exec.Command(scriptPath, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", scriptPath, strings.Join(args, " "), err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

func needCluster(t testing.TB) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

// namespaceFor derives a private namespace from a test's directory, so a
// reopen of the same directory finds the same records. The run id keeps
// runs apart; the namespace is dropped when the test ends.
var dropped sync.Map

func namespaceFor(t testing.TB, addrs []string, dir string) string {
	sum := sha256.Sum256([]byte(dir))
	ns := "utxotest:" + runID + ":" + hex.EncodeToString(sum[:6])
	if _, seen := dropped.LoadOrStore(ns, true); !seen {
		t.Cleanup(func() { dropNamespace(t, addrs, ns) })
	}
	return ns
}

func openAt(t testing.TB, addrs []string, dir string, mod func(*Options)) *Engine {
	t.Helper()
	needCluster(t)
	opt := Options{Addrs: addrs, Namespace: namespaceFor(t, addrs, dir)}
	if mod != nil {
		mod(&opt)
	}
	e, err := Open(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func clusterHarness(t testing.TB, dir string) engine.Engine { return openAt(t, clusterAddrs, dir, nil) }

// dropNamespace removes every key of ns from every master.
func dropNamespace(t testing.TB, addrs []string, ns string) {
	ctx := context.Background()
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs})
	defer c.Close()
	drop := func(ctx context.Context, n *redis.Client) error {
		iter := n.Scan(ctx, 0, ns+":*", 1000).Iterator()
		p := n.Pipeline()
		for iter.Next(ctx) {
			p.Unlink(ctx, iter.Val())
		}
		if _, err := p.Exec(ctx); err != nil && err != redis.Nil && !strings.Contains(err.Error(), "no commands") {
			return err
		}
		return iter.Err()
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, drop)
	} else {
		err = drop(ctx, c.(*redis.Client))
	}
	if err != nil {
		t.Logf("dropping namespace %s: %v", ns, err)
	}
}
