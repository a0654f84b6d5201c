package hcl

import (
	"errors"
	"fmt"
	"github.com/obversa/obversa/internal/pathtree"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// MinKnownSecretBytes is the shortest value, in bytes, a variable named
// in known_secrets_from_env may hold: a shorter one ("e", "local") matches
// ordinary text in plans and events, so every run would be refused
// KNOWN_SECRET (docs/decisions.md, "Known secrets have a minimum length").
const MinKnownSecretBytes = 8

// MinEventPayloadBytes is the smallest max_event_payload_bytes, in bytes:
// the host's own events (a worker's start, an attempt's start, a pause,
// each part of a dispatch decision) must fit one event, and the executor
// keeps this much room for an event's other fields when it decides
// whether a value travels inside an event or as an artifact
// (docs/decisions.md, "The smallest event limit").
const MinEventPayloadBytes = 1024

// storage decodes the storage block into st, over its defaults.
func (d *decoder) storage(body *hclsyntax.Body, st *Storage) {
	attrs := d.attrs(body, "directory", "url", "namespace", "max_event_payload_bytes", "max_batch_bytes",
		"max_artifact_bytes", "max_total_artifact_bytes_per_run", "known_secrets_from_env", "max_log_bytes", "max_stream_bytes")
	if a := attrs["directory"]; a != nil {
		if s, ok := d.nonEmptyStr(a, `a directory, for example directory = ".obversa"`); ok {
			if named, back := StepsBack(s); back {
				d.errorAt(a.Expr.Range(), `Storage directory steps back out with ".."`,
					fmt.Sprintf(`storage.directory %q goes into %q and back out of it with "..": where that leads depends on whether %q is a symbolic link, and the path hides where runs are kept. Write the directory itself, for example directory = %q. (".." at the start of a relative path, as in "../runs", is fine.)`, s, named, named, filepath.Clean(s)))
			} else if abs, ok := d.resolvePath(s, a.Expr.Range(), "storage.directory"); ok {
				st.Directory = abs
				d.storageDirAt = a.Expr.Range().Ptr()
				d.checkStorageDir(s, st.Directory, a.Expr.Range())
			}
		}
	}
	if a := attrs["url"]; a != nil {
		if s, ok := d.nonEmptyStr(a, `a PostgreSQL URL, for example url = "postgres://obversa@db.internal/obversa"`); ok {
			if summary, detail := checkStorageURL(s); summary != "" {
				d.errorAt(a.Expr.Range(), summary, detail)
			} else {
				st.URL = s
			}
		}
	}
	if a := attrs["namespace"]; a != nil {
		if s, ok := d.str(a, `a name, for example namespace = "default"`); ok && d.checkName("namespace", s, a.Expr.Range()) {
			st.Namespace = s
		}
	}
	sizes := []struct {
		name    string
		dst     *int64
		example string
	}{
		{"max_event_payload_bytes", &st.MaxEventPayloadBytes, "65536"},
		{"max_batch_bytes", &st.MaxBatchBytes, "4194304"},
		{"max_artifact_bytes", &st.MaxArtifactBytes, "1048576"},
		{"max_total_artifact_bytes_per_run", &st.MaxTotalArtifactBytesPerRun, "16777216"},
		{"max_log_bytes", &st.MaxLogBytes, "8388608"},
		{"max_stream_bytes", &st.MaxStreamBytes, "67108864"},
	}
	for _, s := range sizes {
		if a := attrs[s.name]; a != nil {
			if v, ok := d.integer(a, 1, s.example); ok {
				*s.dst = v
			}
		}
	}
	if a := attrs["max_event_payload_bytes"]; a != nil && st.MaxEventPayloadBytes < MinEventPayloadBytes {
		d.errorAt(a.Expr.Range(), "max_event_payload_bytes is too small",
			fmt.Sprintf("The value of max_event_payload_bytes must be at least %d; got %d. The run's own events (a worker's start, an attempt's start, a pause) must each fit one event, or every worker would fail on its first write. Set it to a value such as 65536 (the default).", MinEventPayloadBytes, st.MaxEventPayloadBytes))
		st.MaxEventPayloadBytes = DefaultMaxEventPayloadBytes
	}
	if st.MaxBatchBytes < st.MaxEventPayloadBytes {
		rng := body.SrcRange
		if a := attrs["max_batch_bytes"]; a != nil {
			rng = a.Expr.Range()
		} else if a := attrs["max_event_payload_bytes"]; a != nil {
			rng = a.Expr.Range()
		}
		d.errorAt(rng, "max_batch_bytes is smaller than max_event_payload_bytes",
			fmt.Sprintf("A batch holds at least one event, so max_batch_bytes (%d) must be at least max_event_payload_bytes (%d). Raise max_batch_bytes or lower max_event_payload_bytes.", st.MaxBatchBytes, st.MaxEventPayloadBytes))
	}
	if a := attrs["known_secrets_from_env"]; a != nil {
		d.knownSecrets(a, st)
	}
}

// knownSecrets decodes storage's known_secrets_from_env attribute a into
// st: each name must be an environment variable's name, and a variable
// that is set must hold at least MinKnownSecretBytes (a shorter value
// matches ordinary text). Any fault is an error at the name, and leaves
// st's list unset.
func (d *decoder) knownSecrets(a *hclv2.Attribute, st *Storage) {
	names, ranges, ok := d.strList(a, `a list of environment variable names, for example known_secrets_from_env = ["ANTHROPIC_API_KEY"]`)
	if !ok {
		return
	}
	for i, n := range names {
		if !envNamePattern().MatchString(n) {
			d.errorAt(ranges[i], fmt.Sprintf("Invalid environment variable name %q", n),
				"Names in known_secrets_from_env are environment variable names: letters, digits and '_', not starting with a digit, for example \"ANTHROPIC_API_KEY\".")
			ok = false
			continue
		}
		if v := os.Getenv(n); v != "" && len(v) < MinKnownSecretBytes {
			d.errorAt(ranges[i], fmt.Sprintf("Known secret %s is too short", n),
				fmt.Sprintf("known_secrets_from_env names %s, whose value is %d bytes; a known secret must be at least %d bytes, because a shorter value matches ordinary text and every run would be refused for containing it. Set %s to the real secret, or remove it from the list.", n, len(v), MinKnownSecretBytes, n))
		}
	}
	if ok {
		st.KnownSecretsFromEnv = names
	}
}

// limits decodes the limits block into l, over its defaults.
func (d *decoder) limits(body *hclsyntax.Body, l *Limits) {
	attrs := d.attrs(body, "timeout", "max_dispatches", "max_input_tokens", "max_output_tokens", "stop_on_unmeasured", "plugin_memory")
	if a := attrs["max_input_tokens"]; a != nil {
		l.MaxInputTokens, _ = d.integer(a, 1, "100000")
	}
	if a := attrs["max_output_tokens"]; a != nil {
		l.MaxOutputTokens, _ = d.integer(a, 1, "20000")
	}
	if a := attrs["stop_on_unmeasured"]; a != nil {
		l.StopOnUnmeasured, _ = d.boolean(a)
	}
	if a := attrs["timeout"]; a != nil {
		if v, ok := d.duration(a, positiveDuration, "30m"); ok {
			l.Timeout = v
		}
	}
	if a := attrs["max_dispatches"]; a != nil {
		if v, ok := d.intAttr(a, 1, "200"); ok {
			l.MaxDispatches = v
		}
	}
	if a := attrs["plugin_memory"]; a != nil {
		if v, ok := d.size(a, MinPluginMemory, `plugin_memory = "2GiB"`); ok {
			l.PluginMemory = v
		}
	}
}

// restart decodes the restart block into r, over its defaults.
func (d *decoder) restart(body *hclsyntax.Body, r *Restart) {
	attrs := d.attrs(body, "max_restarts", "initial_backoff", "max_backoff")
	if a := attrs["max_restarts"]; a != nil {
		if v, ok := d.intAttr(a, 0, "3"); ok {
			r.MaxRestarts = v
		}
	}
	if a := attrs["initial_backoff"]; a != nil {
		if v, ok := d.duration(a, nonNegativeDuration, "1s"); ok {
			r.InitialBackoff = v
		}
	}
	if a := attrs["max_backoff"]; a != nil {
		if v, ok := d.duration(a, nonNegativeDuration, "30s"); ok {
			r.MaxBackoff = v
		}
	}
	if r.MaxBackoff < r.InitialBackoff {
		rng := body.SrcRange
		if a := attrs["max_backoff"]; a != nil {
			rng = a.Expr.Range()
		} else if a := attrs["initial_backoff"]; a != nil {
			rng = a.Expr.Range()
		}
		d.errorAt(rng, "max_backoff is shorter than initial_backoff",
			fmt.Sprintf("The restart backoff grows from initial_backoff (%s) up to max_backoff (%s), so max_backoff must be at least initial_backoff. Raise max_backoff or lower initial_backoff.", r.InitialBackoff, r.MaxBackoff))
	}
}

// preflight decodes the preflight block into p, over its defaults.
func (d *decoder) preflight(body *hclsyntax.Body, p *Preflight) {
	attrs := d.attrs(body, "timeout")
	if a := attrs["timeout"]; a != nil {
		if v, ok := d.duration(a, positiveDuration, "20s"); ok {
			p.Timeout = v
		}
	}
}

// trustedKeys decodes a trusted_keys list: non-empty strings.
func (d *decoder) trustedKeys(a *hclv2.Attribute) ([]string, []hclv2.Range) {
	keys, ranges, ok := d.strList(a, `a list of minisign public keys or key file paths, for example trusted_keys = ["keys/release.pub"]`)
	if !ok {
		return nil, nil
	}
	for i, k := range keys {
		if k == "" {
			d.errorAt(ranges[i], "Empty trusted key", "Each entry of trusted_keys is a minisign public key (its base64 line) or the path of a .pub file; remove the empty string.")
			return nil, nil
		}
	}
	return keys, ranges
}

// checkStorageDir diagnoses a storage directory that can never be created
// or used: it, or the nearest of its parents that exists, is not a
// directory (a regular file, a device). A directory that does not exist
// yet is fine: the first run creates it.
func (d *decoder) checkStorageDir(written, dir string, rng hclv2.Range) {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return
		case err == nil:
			what := fmt.Sprintf("%q is a file, not a directory", written)
			if p != dir {
				what = fmt.Sprintf("%q lies under %q, which is a file, not a directory", written, p)
			}
			d.errorAt(rng, "Storage directory is not a directory",
				fmt.Sprintf("storage.directory %s, so no run can be recorded there. Point directory at a directory (it is created when missing), or move the file.", what))
			return
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return
		}
		if filepath.Dir(p) == p {
			return
		}
	}
}

// checkStorageHoldsRoot warns of a storage directory that is the
// workspace root or holds it: plugins never write in the storage
// directory but for their scratch and state directories
// (docs/confinement.md), so every plugin of the run would find the whole
// workspace read-only. Paths are compared as written and, where they
// exist, with symbolic links resolved. A database (storage.url) keeps no
// records in the directory and is not checked.
func (d *decoder) checkStorageHoldsRoot(rf *RunFile) {
	st, root := rf.Storage.Directory, rf.Workspace.Root
	if st == "" || root == "" || rf.Storage.URL != "" {
		return
	}
	holds := pathtree.Within(st, root)
	if realSt, err := filepath.EvalSymlinks(st); err == nil {
		if realRoot, err := filepath.EvalSymlinks(root); err == nil {
			holds = holds || pathtree.Within(realSt, realRoot)
		}
	}
	if !holds {
		return
	}
	at := hclv2.Range{Filename: d.filename, Start: hclv2.InitialPos, End: hclv2.InitialPos}
	switch {
	case d.storageDirAt != nil:
		at = *d.storageDirAt
	case d.rootAt != nil:
		at = *d.rootAt
	}
	what := "holds the workspace root"
	if filepath.Clean(st) == filepath.Clean(root) {
		what = "is the workspace root"
	}
	d.warnAt(at, "Storage directory holds the workspace",
		fmt.Sprintf("storage.directory %q %s (workspace.root %q). Plugins never write in the storage directory (it holds the records), so every plugin of this run would find the whole workspace read-only. Keep the storage directory inside the workspace, for example directory = \".obversa\" with root = \".\", or beside it.",
			st, what, root))
}

// StepsBack reports whether path p goes into a directory and back out of
// it: a ".." segment after a named one ("/root/../etc", "runs/../x").
// named is the directory it steps back out of. ".." at the start of a
// relative path ("../runs") climbs from where the path starts and does
// not count (docs/decisions.md, "A storage directory does not step back
// out with ..").
func StepsBack(p string) (named string, back bool) {
	for _, seg := range strings.Split(filepath.ToSlash(p), "/") {
		switch seg {
		case "", ".":
		case "..":
			if named != "" {
				return named, true
			}
		default:
			named = seg
		}
	}
	return "", false
}
