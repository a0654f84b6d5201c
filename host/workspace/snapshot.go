package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// Provider names accepted by Take (docs/architecture.md#the-watchdog; the run file's
// workspace provider).
const (
	ProviderGit   = "git"
	ProviderFiles = "files"
	ProviderNone  = "none"
)

// Mode bits used in Entry.Mode: the Unix st_mode file types and the
// permission bits kept for a regular file.
const (
	ModeRegular  uint32 = 0o100000 // S_IFREG
	ModeSymlink  uint32 = 0o120000 // S_IFLNK
	modeTypeMask uint32 = 0o170000 // S_IFMT
	modePermMask uint32 = 0o7777   // permissions, setuid, setgid, sticky
)

// Names skipped at every depth by both providers: the project's own state
// (lease, storage) and git's metadata.
const (
	stateDirName = ".obversa"
	gitDirName   = ".git"
)

// Snapshot is the recorded state of a workspace. Manifest is sorted by
// path and Files equals its length; Digest identifies the manifest (see the
// package documentation for the canonical form).
type Snapshot struct {
	Provider string  `json:"provider"`       // "git", "files" or "none"
	Root     string  `json:"root"`           // absolute, clean path of the workspace root
	Digest   string  `json:"digest"`         // "sha256:<hex>" over the canonical manifest; "" for none
	Files    int     `json:"files"`          // len(Manifest)
	Head     string  `json:"head,omitempty"` // git: HEAD commit id; empty in a repository with no commits
	Manifest []Entry `json:"manifest"`       // sorted by Path, unique
}

// Entry is one file of a snapshot.
type Entry struct {
	Path   string `json:"path"`   // relative to the root, slash-separated, clean
	Mode   uint32 `json:"mode"`   // Unix st_mode: ModeRegular|perm, or exactly ModeSymlink
	Size   int64  `json:"size"`   // bytes of content; for a symlink, of its target string
	SHA256 string `json:"sha256"` // lowercase hex SHA-256 of the content; for a symlink, of its target string
}

// Options adjusts what a snapshot covers. The zero value is ready to use.
type Options struct {
	// Exclude lists absolute directories to skip, e.g. the storage
	// directory when it lies inside the workspace. Directories outside the
	// root, or that do not exist, are ignored; the root itself (or an
	// ancestor of it) excludes everything.
	Exclude []string
}

// Take snapshots the workspace at root with the named provider.
//
// It returns an error wrapping ErrProvider for an unknown provider, for
// "git" when root is not inside a git work tree (the message suggests
// provider = "files") or git fails, and when a file name is not valid
// UTF-8. It returns ctx's error, wrapped, when ctx ends first, and an I/O
// error when root is not a directory or a directory or file under it cannot
// be read. Files that disappear while the snapshot is taken are left out;
// a workspace that changes during Take yields some mix of its states, which
// the next Verify reports as drift.
func Take(ctx context.Context, root, provider string, o Options) (*Snapshot, error) {
	switch provider {
	case ProviderGit, ProviderFiles, ProviderNone:
	default:
		return nil, fmt.Errorf("workspace: unknown provider %q (want %q, %q or %q): %w",
			provider, ProviderGit, ProviderFiles, ProviderNone, ErrProvider)
	}
	if root == "" {
		return nil, fmt.Errorf("workspace: empty root")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("workspace: root %s: %w", root, err)
	}
	if !utf8.ValidString(abs) || strings.ContainsRune(abs, 0) {
		return nil, fmt.Errorf("workspace: root %q is not a valid UTF-8 path: %w", abs, ErrProvider)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("workspace: snapshot of %s: %w", abs, err)
	}
	s := &Snapshot{Provider: provider, Root: abs, Manifest: []Entry{}}
	if provider == ProviderNone {
		return s, nil
	}

	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace: root %s is not a directory", abs)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: root: %w", err)
	}
	ex, err := newExcluder(abs, resolved, o.Exclude)
	if err != nil {
		return nil, err
	}

	var cands []candidate
	switch provider {
	case ProviderFiles:
		cands, err = listFiles(ctx, resolved, ex)
	case ProviderGit:
		s.Head, cands, err = listGit(ctx, abs, ex)
	}
	if err != nil {
		return nil, err
	}
	s.Manifest, err = hashAll(ctx, resolved, cands)
	if err != nil {
		return nil, fmt.Errorf("workspace: %s snapshot of %s: %w", provider, abs, err)
	}
	s.Files = len(s.Manifest)
	s.Digest = manifestDigest(s.Manifest)
	return s, nil
}

// excluder decides which relative paths Options.Exclude removes.
type excluder struct {
	all  bool                // the root itself is excluded
	dirs map[string]struct{} // slash-separated paths relative to the root
}

// newExcluder resolves each excluded directory against the root both as
// written (abs) and with symlinks resolved (resolved), so that an exclude
// spelled through either form matches.
func newExcluder(abs, resolved string, exclude []string) (excluder, error) {
	x := excluder{dirs: map[string]struct{}{}}
	add := func(base, dir string) {
		if isAncestor(dir, base) {
			x.all = true
			return
		}
		if rel, err := filepath.Rel(base, dir); err == nil && filepath.IsLocal(rel) {
			x.dirs[filepath.ToSlash(rel)] = struct{}{}
		}
	}
	for _, d := range exclude {
		if !filepath.IsAbs(d) {
			return excluder{}, fmt.Errorf("workspace: exclude %q is not an absolute path", d)
		}
		d = filepath.Clean(d)
		add(abs, d)
		if r, err := filepath.EvalSymlinks(d); err == nil {
			add(resolved, r)
		}
	}
	return x, nil
}

// isAncestor reports whether dir is base or one of its ancestors.
func isAncestor(dir, base string) bool {
	rel, err := filepath.Rel(dir, base)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// skips reports whether the slash-separated relative path rel is an
// excluded directory or lies below one.
func (x excluder) skips(rel string) bool {
	if x.all {
		return true
	}
	if len(x.dirs) == 0 {
		return false
	}
	for i := 0; i <= len(rel); i++ {
		if i == len(rel) || rel[i] == '/' {
			if _, ok := x.dirs[rel[:i]]; ok {
				return true
			}
		}
	}
	return false
}

// validName reports whether rel (slash-separated, relative) can be
// recorded: an error wrapping ErrProvider when it is not valid UTF-8.
func validName(root, rel string) error {
	if !utf8.ValidString(rel) {
		return fmt.Errorf("workspace: %q under %s is not a valid UTF-8 name; snapshots record UTF-8 names only — rename it, or move it out of the workspace: %w",
			rel, root, ErrProvider)
	}
	return nil
}

// sortEntries orders a manifest by path (byte order).
func sortEntries(m []Entry) {
	slices.SortFunc(m, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
}
