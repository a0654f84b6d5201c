package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ctxCheckEvery is how many directory entries the walk visits between
// checks of its context.
const ctxCheckEvery = 256

// listFiles walks base (the root with symlinks resolved) without following
// symlinks and returns its regular files and symlinks, minus .git,
// .obversa and excluded directories.
func listFiles(ctx context.Context, base string, ex excluder) ([]candidate, error) {
	if ex.all {
		return nil, nil
	}
	prefix := base
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	var (
		cands   []candidate
		visited int
	)
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != base && errors.Is(err, fs.ErrNotExist) {
				return nil // removed during the walk
			}
			return err
		}
		if p == base {
			return nil
		}
		if visited++; visited%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, prefix))
		name := d.Name()
		if d.IsDir() {
			if name == gitDirName || name == stateDirName || ex.skips(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if name == gitDirName { // a gitlink file of a worktree or submodule
			return nil
		}
		if _, ok := ex.dirs[rel]; ok { // an excluded directory that is now a file or symlink
			return nil
		}
		t := d.Type()
		if !t.IsRegular() && t != fs.ModeSymlink {
			return nil
		}
		if err := validName(base, rel); err != nil {
			return err
		}
		cands = append(cands, candidate{rel: rel, typ: t, known: true})
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrProvider) {
			return nil, err
		}
		return nil, fmt.Errorf("workspace: files snapshot of %s: %w", base, err)
	}
	return cands, nil
}

// statDir reports whether path is a real directory (not a symlink to one).
func statDir(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if vanished(err) {
			return false, nil
		}
		return false, err
	}
	return fi.IsDir(), nil
}
