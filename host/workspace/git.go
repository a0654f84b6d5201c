package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// maxGitStderr bounds how much of git's stderr goes into an error, bytes.
const maxGitStderr = 2048

// listGit lists the work tree files git knows about under root — tracked
// plus untracked-but-not-ignored — and the HEAD commit. It never writes to
// the repository: ls-files and rev-parse only read, and GIT_OPTIONAL_LOCKS=0
// stops git from refreshing the index on the side.
func listGit(ctx context.Context, root string, ex excluder) (head string, cands []candidate, err error) {
	out, _, err := runGit(ctx, root, "rev-parse", "--is-inside-work-tree")
	if err == nil && strings.TrimSpace(string(out)) != "true" {
		err = errors.New("not inside a git work tree")
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", nil, fmt.Errorf("workspace: git snapshot of %s: %w", root, ctx.Err())
		}
		return "", nil, fmt.Errorf("workspace: %s is not usable as a git workspace (%v); set provider = %q in the run file's workspace block to snapshot plain files: %w",
			root, err, ProviderFiles, ErrProvider)
	}

	out, code, err := runGit(ctx, root, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	switch {
	case err == nil:
		head = strings.TrimSpace(string(out))
	case code == 1: // no commits yet
	default:
		return "", nil, gitFailed(ctx, root, "rev-parse HEAD", err)
	}

	paths, err := lsFiles(ctx, root)
	if err != nil {
		return "", nil, gitFailed(ctx, root, "ls-files", err)
	}
	dirs := dirChecker{root: root, ok: map[string]bool{}}
	for _, rel := range paths {
		if strings.HasSuffix(rel, "/") || ex.skips(rel) || hiddenByState(rel) {
			continue // a nested repository, or skipped by rule
		}
		if err := validName(root, rel); err != nil {
			return "", nil, err
		}
		inTree, err := dirs.realParents(rel)
		if err != nil {
			return "", nil, fmt.Errorf("workspace: git snapshot of %s: %w", root, err)
		}
		if inTree {
			cands = append(cands, candidate{rel: rel})
		}
	}
	return head, cands, nil
}

// hiddenByState reports whether a listed path is a .git entry or lies in a
// .git or .obversa directory.
func hiddenByState(rel string) bool {
	for elem := range strings.SplitSeq(rel, "/") {
		if elem == gitDirName {
			return true
		}
	}
	dir, _, found := cutLast(rel, "/")
	if !found {
		return false
	}
	for elem := range strings.SplitSeq(dir, "/") {
		if elem == stateDirName {
			return true
		}
	}
	return false
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// dirChecker remembers which parent directories of listed paths are real
// directories. A tracked path below a directory that became a symlink is
// not in the work tree (git reports it deleted), and hashing it would read
// whatever the symlink points to.
type dirChecker struct {
	root string
	ok   map[string]bool
}

// realParents reports whether every directory on the way to rel is a real
// directory.
func (d dirChecker) realParents(rel string) (bool, error) {
	for i := 0; i < len(rel); i++ {
		if rel[i] != '/' {
			continue
		}
		dir := rel[:i]
		ok, seen := d.ok[dir]
		if !seen {
			var err error
			ok, err = statDir(filepath.Join(d.root, filepath.FromSlash(dir)))
			if err != nil {
				return false, err
			}
			d.ok[dir] = ok
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// lsFiles streams `git ls-files -z --cached --others --exclude-standard`
// and returns its paths sorted and unique (a path in a merge conflict is
// listed once per stage).
func lsFiles(ctx context.Context, root string) ([]string, error) {
	cmd := gitCommand(ctx, root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	stderr := &limitedBuffer{max: maxGitStderr}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var paths []string
	r := bufio.NewReaderSize(stdout, 64<<10)
	var readErr error
	for {
		p, err := r.ReadString(0)
		if err == io.EOF {
			if p != "" {
				readErr = fmt.Errorf("unterminated path %q in git output", p)
			}
			break
		}
		if err != nil {
			readErr = err
			break
		}
		paths = append(paths, p[:len(p)-1])
	}
	if readErr != nil {
		io.Copy(io.Discard, r)
	}
	if err := cmd.Wait(); err != nil {
		return nil, withStderr(err, stderr)
	}
	if readErr != nil {
		return nil, readErr
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// runGit runs git in root and returns its stdout and exit code (-1 when it
// did not run to an exit).
func runGit(ctx context.Context, root string, args ...string) ([]byte, int, error) {
	cmd := gitCommand(ctx, root, args...)
	var stdout bytes.Buffer
	stderr := &limitedBuffer{max: maxGitStderr}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := cmd.Run()
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if err != nil {
		return nil, code, withStderr(err, stderr)
	}
	return stdout.Bytes(), code, nil
}

// repoLocatingEnv are the variables that point git at a repository other
// than the one around its working directory (as set inside a git hook, for
// one). The workspace root alone decides which repository is snapshotted.
var repoLocatingEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX",
}

// gitCommand prepares a read-only git invocation in root.
func gitCommand(ctx context.Context, root string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(repoLocatingEnv, name) || name == "GIT_OPTIONAL_LOCKS"
	})
	cmd.Env = append(env, "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
	return cmd
}

// gitFailed wraps the failure of a git command that should have worked in
// a work tree: ctx's error when it ended, otherwise ErrProvider.
func gitFailed(ctx context.Context, root, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("workspace: git %s in %s: %w", what, root, ctx.Err())
	}
	return fmt.Errorf("workspace: git %s in %s: %w: %w", what, root, err, ErrProvider)
}

// withStderr adds git's own message to a failed run.
func withStderr(err error, stderr *limitedBuffer) error {
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}

// limitedBuffer keeps the first max bytes written to it and drops the
// rest, so a chatty child cannot grow our memory.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string { return b.buf.String() }
