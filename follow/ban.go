package follow

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/utxostore/utxostore/internal/fsutil"
)

// DefaultBanDuration is how long a peer that sent invalid data is banned,
// as bitcoind's -bantime.
const DefaultBanDuration = 24 * time.Hour

// invalidDataError is data from the peer the follower refuses: it ends the
// connection and bans the peer.
type invalidDataError struct{ err error }

func (e *invalidDataError) Error() string { return "invalid data from the peer: " + e.err.Error() }
func (e *invalidDataError) Unwrap() error { return e.err }

func invalid(format string, args ...any) error {
	return &invalidDataError{fmt.Errorf(format, args...)}
}

// isInvalid reports whether err is the peer's invalid data.
func isInvalid(err error) bool {
	_, bad := errors.AsType[*invalidDataError](err)
	return bad
}

// Ban is a peer's ban: no connection to it until Until.
type Ban struct {
	Until  time.Time `json:"until"`
	Reason string    `json:"reason"` // the invalid data
}

// BannedError is Run's answer, with Config.StopAtTip, while the peer is
// banned: the tip cannot be reached.
type BannedError struct {
	Peer string
	Ban
}

func (e *BannedError) Error() string {
	return fmt.Sprintf("the peer %s is banned until %s for sending invalid data (%s)", e.Peer, e.Until.UTC().Format(time.RFC3339), e.Reason)
}

// Banned returns the peer's ban while it lasts.
func (f *Follower) Banned() (Ban, bool) {
	b := f.ban.Load()
	if b == nil || !time.Now().Before(b.Until) {
		return Ban{}, false
	}
	return *b, true
}

// banFor bans the peer for the invalid data err, and keeps the ban in
// Config.BanFile.
func (f *Follower) banFor(err error) error {
	b := Ban{Until: time.Now().Add(f.cfg.BanDuration), Reason: err.Error()}
	f.cfg.Metrics.bans.Inc()
	f.setBan(&b)
	return f.saveBan(&b) // Run logs it
}

// lift ends the peer's ban once it has run out.
func (f *Follower) lift() error {
	f.setBan(nil)
	f.log.Info(fmt.Sprintf("the ban of peer %s has run out; connecting", f.cfg.Peer))
	return f.saveBan(nil)
}

// setBan sets the ban and its metric, the metric first, so that whoever
// sees the ban (the daemon's readiness) finds it in the metrics too.
func (f *Follower) setBan(b *Ban) {
	until := 0.0
	if b != nil {
		until = float64(b.Until.Unix())
	}
	f.cfg.Metrics.bannedUntil.Set(until)
	f.ban.Store(b)
}

// The ban file maps peer addresses to their bans.
type banFile map[string]Ban

// loadBan reads the peer's ban from Config.BanFile (none when the file
// does not exist, or holds no ban of the peer).
func (f *Follower) loadBan() error {
	bans, err := f.readBans()
	if err != nil {
		return err
	}
	if b, ok := bans[f.cfg.Peer]; ok {
		f.setBan(&b)
	}
	return nil
}

func (f *Follower) readBans() (banFile, error) {
	bans := banFile{}
	if f.cfg.BanFile == "" {
		return bans, nil
	}
	data, err := os.ReadFile(f.cfg.BanFile)
	if errors.Is(err, os.ErrNotExist) {
		return bans, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &bans)
	}
	if err != nil {
		return nil, fmt.Errorf("the ban file %s: %w", f.cfg.BanFile, err)
	}
	return bans, nil
}

// saveBan writes the peer's ban (nil: none) into Config.BanFile, keeping
// the other peers' bans.
func (f *Follower) saveBan(b *Ban) error {
	if f.cfg.BanFile == "" {
		return nil
	}
	bans, err := f.readBans()
	if err != nil {
		return err
	}
	delete(bans, f.cfg.Peer)
	if b != nil {
		bans[f.cfg.Peer] = *b
	}
	data, err := json.MarshalIndent(bans, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.cfg.BanFile), 0o755); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(f.cfg.BanFile, append(data, '\n')); err != nil {
		return fmt.Errorf("writing the ban file %s: %w", f.cfg.BanFile, err)
	}
	return nil
}
