package watchdog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/internal/durable"
	"github.com/obversa/obversa/plugin"
)

// Pin is what Pins established about one plugin of a run file.
type Pin struct {
	// SHA256 is the pinned digest, which the binary has (lower-case hex).
	SHA256 string
	// KeyID and Signature describe the verified signature ("sha256:<hex>"
	// of the .minisig file); empty when no trusted key applies.
	KeyID     string
	Signature string
	// Stamp is the stamp the plugin's cache entry showed while it was
	// compared in full with the source (launch.Source.Stamp); nil when
	// the entry was written now, or was too young to vouch for.
	Stamp *plugin.FileStamp
}

// Pins resolves each plugin's expected digest — the run file's `sha256`,
// else obversa.lock.hcl; both must agree when both exist — and checks the
// binary on disk against it, reading it once (launch.CheckSource); where
// trusted_keys apply (launch.TrustedKeys) it also requires a valid
// signature by one of them for this platform. With storageDir set, the
// checked bytes are placed in that storage directory's plugin cache, the
// only copy a run executes. A plugin pinned nowhere is refused unless tofu
// is set, in which case its current digest (and verified signature) is
// written to the lock file once every plugin has passed. Errors name the
// plugin, the path and, for a mismatch, both digests and the command that
// re-pins: ErrPinConflict, ErrUnpinned, ErrPluginMissing, ErrNotRegular
// (a device, pipe or directory), *plugin.DigestMismatchError,
// *plugin.UntrustedError, launch.ErrTrustedKey, launch.ErrSidecar,
// launch.ErrPluginChanged, *CacheCopyError (a storage directory that
// cannot hold the plugin cache), or a *DiagnosticsError for an invalid lock
// file.
func Pins(rf *hcl.RunFile, runFile string, tofu bool, storageDir string) (map[string]Pin, error) {
	lockPath := hcl.LockFilePath(runFile)
	lf, diags := hcl.DecodeLockFile(lockPath)
	if diags.HasErrors() {
		return nil, &DiagnosticsError{Diags: diags}
	}
	jobs := make([]pinJob, 0, len(rf.Plugins))
	for i := range rf.Plugins {
		j := resolvePin(rf, lf, &rf.Plugins[i], runFile, tofu)
		jobs = append(jobs, j)
		if j.refused != nil {
			break
		}
	}
	readSources(jobs, storageDir)
	out := map[string]Pin{}
	changed := false
	for _, j := range jobs {
		if j.err != nil {
			return nil, pinError(j.err, rf, j.pl, runFile)
		}
		if j.refused != nil {
			return nil, j.refused
		}
		pin := Pin{SHA256: j.src.SHA256, Stamp: j.src.Stamp}
		if v := j.src.Verified; v != nil {
			pin.KeyID, pin.Signature = v.KeyID, v.Signature
		}
		if j.expected == "" {
			lf.Set(hcl.LockedPlugin{Name: j.pl.Name, Path: j.pl.LockPath(),
				SHA256: pin.SHA256, KeyID: pin.KeyID, Signature: pin.Signature})
			changed = true
		}
		out[j.pl.Name] = pin
	}
	if changed {
		if _, err := WriteLockFile(lockPath, lf); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// WriteLockFile writes lf to the lock file at path (obversa.lock.hcl),
// unless the file already holds exactly what it would write: written is
// then false, and a lock file that is current in a directory nobody may
// write is no error. A write that fails leaves the file as it was
// (durable.WriteFile writes a temporary file and renames it over it); its
// error wraps ErrLockFileNotWritten, naming the file and saying that
// nothing was written.
func WriteLockFile(path string, lf *hcl.LockFile) (written bool, err error) {
	data := hcl.EncodeLockFile(lf)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err := durable.WriteFile(path, data, 0o644); err != nil {
		cause := err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			cause = pe.Err
		}
		return false, fmt.Errorf("%w: %s (%v): nothing was written, the file is as it was; make its directory writable, or lock a copy of the run file where you may write", ErrLockFileNotWritten, path, cause)
	}
	return true, nil
}

// pinJob is one plugin of Pins: what it expects and, once read, what its
// source holds.
type pinJob struct {
	pl       *hcl.Plugin
	keys     []plugin.PublicKey
	expected string
	// refused is the plugin's refusal found before reading its source: a
	// pin conflict, no pin, an unusable trusted key.
	refused error
	src     launch.Source
	err     error
}

// resolvePin finds what plugin pl is pinned to and which keys must sign
// it, or why it is refused before its source is read.
func resolvePin(rf *hcl.RunFile, lf *hcl.LockFile, pl *hcl.Plugin, runFile string, tofu bool) pinJob {
	j := pinJob{pl: pl}
	lockPath := hcl.LockFilePath(runFile)
	if j.keys, j.refused = launch.TrustedKeys(rf, pl); j.refused != nil {
		return j
	}
	locked, inLock := lf.Lookup(pl.Name)
	j.expected = pl.SHA256
	switch {
	case j.expected != "" && inLock && locked.SHA256 != j.expected:
		j.refused = fmt.Errorf("%w: plugin %q: run file pins sha256 %s, %s pins %s; remove one or run `obversa plugin lock --upgrade %s`",
			ErrPinConflict, pl.Name, j.expected, lockPath, locked.SHA256, runFile)
	case j.expected == "" && inLock:
		j.expected = locked.SHA256
	case j.expected == "" && !tofu:
		if _, err := launch.CheckSource(pl.Name, pl.Path, "", nil, ""); err != nil {
			j.refused = pinError(err, rf, pl, runFile)
			return j
		}
		j.refused = fmt.Errorf("%w: plugin %q (%s) has no sha256 in the run file and no entry in %s; run `obversa plugin lock %s` to pin it",
			ErrUnpinned, pl.Name, pl.Path, lockPath, runFile)
		if note := hcl.LinkedLockNote(runFile); note != "" {
			j.refused = fmt.Errorf("%w; %s", j.refused, note)
		}
	}
	return j
}

// readSources reads the source of every job not refused
// (launch.CheckSourceAgain into storageDir's cache: a source and cache
// entry unchanged since an earlier run read them are not read again),
// side by side on as many goroutines as there are processors: hashing the
// binaries is most of what a start spends before its run exists when
// they must be read.
func readSources(jobs []pinJob, storageDir string) {
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range jobs {
		if jobs[i].refused != nil {
			continue
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			j := &jobs[i]
			j.src, j.err = launch.CheckSourceAgain(j.pl.Name, j.pl.Path, j.expected, j.keys, storageDir)
		})
	}
	wg.Wait()
}
