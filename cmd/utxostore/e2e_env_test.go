package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// runEnv runs the binary with extra environment variables.
func runEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(utxostoreBin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// Every command reads a flag it is not given from the environment,
// UTXOSTORE_<FLAG>, as serve does: the command line wins over it, a value
// the flag cannot take is refused naming the variable, and a setting that
// waives a safeguard is taken from the command line only.
func TestEveryCommandReadsTheEnvironment(t *testing.T) {
	data, summary := seedStore(t, "pebble")
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{[]string{"UTXOSTORE_DATA=" + data}, []string{"info"}},
		{[]string{"UTXOSTORE_DATA=" + missing}, []string{"info", "--data", data}},
	} {
		stdout, stderr, err := runEnv(t, c.env, c.args...)
		if got := strings.TrimSpace(stdout); err != nil || got != summary {
			t.Errorf("%v utxostore %v: %v, %s\n%s\nwant %s", c.env, c.args, err, got, stderr, summary)
		}
	}
	_, stderr, err := runEnv(t, []string{"UTXOSTORE_DATA=" + data, "UTXOSTORE_ENGINE=sozu"}, "verify")
	if exitCode(err) != 2 || !strings.Contains(stderr, "holds a pebble store") {
		t.Errorf("UTXOSTORE_ENGINE=sozu on a pebble store: %v\n%s", err, stderr)
	}
	_, stderr, err = runEnv(t, []string{"UTXOSTORE_BLOCK_RETENTION=many"}, "import", "--data", missing, "--index", "nosuch.blk")
	if exitCode(err) != 2 || !strings.Contains(stderr, `UTXOSTORE_BLOCK_RETENTION="many"`) {
		t.Errorf("UTXOSTORE_BLOCK_RETENTION=many: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused import created %s: %v", missing, err)
	}
	stdout, stderr, err := runEnv(t, []string{"UTXOSTORE_TRUST_BLOCKS=true", "UTXOSTORE_DISCARD_CORRUPT_LOG=true"}, "config", "--data", data)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, stderr)
	}
	for _, name := range []string{"trust-blocks", "discard-corrupt-log"} {
		if !regexp.MustCompile(`(?m)^` + name + `\s+false\s+default$`).MatchString(stdout) {
			t.Errorf("the environment set --%s:\n%s", name, stdout)
		}
	}
}
