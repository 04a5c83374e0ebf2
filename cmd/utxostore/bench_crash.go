package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/utxostore/utxostore/bench/driver"
	"github.com/utxostore/utxostore/bench/report"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/utxo"
)

// crashPlan is what bench --crash asks of one child: to kill itself at
// the crash point, noting it in killFile, or to resume the replay that a
// kill left in the store, from the note in resumeFile.
type crashPlan struct {
	killFile   string
	resumeFile string
}

// crashedChild runs an engine's replay killed at its crash point and then
// resumed on the reopened store: the first child writes crashFile and
// ends by SIGKILL, the second reopens the store (timed), finishes the
// stream and writes the result, its Recovery filled in.
func crashedChild(ctx context.Context, name string, args []string, exe, crashFile, resultPath string) *report.EngineResult {
	fail := func(msg string) *report.EngineResult { return &report.EngineResult{Engine: name, Err: msg} }
	cmd := exec.CommandContext(ctx, exe, append(args, "--crash-file="+crashFile)...)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !killedBySIGKILL(exit) {
		// A child that failed says why in its result.
		if data, readErr := os.ReadFile(resultPath); readErr == nil {
			var res report.EngineResult
			if json.Unmarshal(data, &res) == nil && res.Err != "" {
				return fail(res.Err)
			}
		}
		return fail(fmt.Sprintf("the replay to be killed was not killed by SIGKILL (%v)", err))
	}
	if _, err := os.Stat(crashFile); err != nil {
		return fail("the replay was killed before its crash point: " + err.Error())
	}
	return runChild(ctx, name, exec.CommandContext(ctx, exe, append(args, "--resume-from="+crashFile)...), resultPath)
}

func killedBySIGKILL(exit *exec.ExitError) bool {
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// crashAt returns the driver hook that kills this process, with SIGKILL,
// at the measured block boundary after which the store's log holds the
// most it can: when one more block like the last would reach Sozu's
// ckptlog, past which the next boundary takes a page checkpoint and
// starts the log again. It notes the point in file first.
func crashAt(ctx context.Context, store *utxo.DB, file string) (func(applied int, live uint64), error) {
	eng, ok := sozuEngine(store)
	if !ok {
		return nil, fmt.Errorf("--crash kills engine sozu, not %s", store.Engine().Name())
	}
	bound := eng.CheckpointLogBytes()
	last := int64(-1) // the log after the last measured block, once there is one
	return func(applied int, live uint64) {
		st, err := eng.Stats(ctx)
		if err != nil {
			return // the replay's next call reports it
		}
		grew := st.WALBytes - last
		if last < 0 {
			grew = 0
		}
		last = st.WALBytes
		if grew <= 0 || st.WALBytes+grew < bound {
			return
		}
		note := report.RecoveryResult{AppliedOps: applied, LiveUTXOs: live, LogBytes: st.WALBytes, CheckpointLogBytes: bound}
		data, err := json.Marshal(note)
		if err == nil {
			err = os.WriteFile(file, data, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench --crash: noting the crash point:", err)
			os.Exit(1)
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal ends the process
	}, nil
}

// reopenCrashed opens the store a killed replay left, timing the open
// (Sozu replays its log there), and returns it with the recovery report
// and the options that resume the replay after the operations it holds.
func reopenCrashed(ctx context.Context, sf storeFlags, file string, opts driver.Options) (*utxo.DB, *report.RecoveryResult, driver.Options, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, opts, err
	}
	var rec report.RecoveryResult
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, nil, opts, fmt.Errorf("the crash point %s: %w", file, err)
	}
	start := time.Now()
	store, err := sf.open(ctx, existingStore)
	if err != nil {
		return nil, nil, opts, fmt.Errorf("reopening after the kill: %w", err)
	}
	rec.OpenSeconds = time.Since(start).Seconds()
	if eng, ok := sozuEngine(store); ok {
		st, err := eng.Stats(ctx)
		if err != nil {
			store.Close()
			return nil, nil, opts, err
		}
		rec.ReplayedRecords, rec.ReplayedBytes = st.Recovery.ReplayedRecords, st.Recovery.ReplayedBytes
	}
	opts.Skip = rec.AppliedOps
	return store, &rec, opts, nil
}

// sozuEngine returns the Sozu engine store runs on, if it runs on one.
func sozuEngine(store *utxo.DB) (*sozu.Engine, bool) {
	eng := store.Engine()
	if w, ok := eng.(interface{ Unwrap() engine.Engine }); ok {
		eng = w.Unwrap()
	}
	s, ok := eng.(*sozu.Engine)
	return s, ok
}
