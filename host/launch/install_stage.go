package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/obversa/obversa/plugin"
)

// staged is what stage found in a source.
type staged struct {
	// binary is the base name of the one plugin binary.
	binary string
	// has holds the base names of the files staged beside it.
	has map[string]bool
	// from maps a staged base name to its slash-separated path inside
	// the source, so errors can name the source's file.
	from    map[string]string
	ignored []string
}

// sourceFile is one regular file of a source.
type sourceFile struct {
	name string // slash-separated path inside the source
	size int64
	open func() (io.ReadCloser, error)
}

// stage lists the source's files, picks the plugin binary by the
// discovery grammar and copies it and its sidecars into dir.
func stage(src, dir string) (*staged, error) {
	files, closer, err := listSource(src, dir)
	if err != nil {
		return nil, err
	}
	defer closer()
	out := &staged{has: map[string]bool{}, from: map[string]string{}}
	byBase, binaries, err := out.topLevel(src, files)
	if err != nil {
		return nil, err
	}
	if out.binary, err = oneBinary(src, binaries, out.ignored); err != nil {
		return nil, err
	}
	if err := out.copyWanted(byBase, dir); err != nil {
		return nil, err
	}
	sort.Strings(out.ignored)
	return out, nil
}

// listSource lists the regular files of src, a directory or an archive;
// tar members are buffered under dir. The returned func releases the
// source once its files have been read.
func listSource(src, dir string) ([]sourceFile, func() error, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, nil, err
	}
	var files []sourceFile
	closer := func() error { return nil }
	switch {
	case st.IsDir():
		files, err = dirFiles(src)
	case hasSuffix(src, ".tar.gz", ".tgz"):
		files, err = tarFiles(src, true, dir)
	case hasSuffix(src, ".tar"):
		files, err = tarFiles(src, false, dir)
	case hasSuffix(src, ".zip"):
		files, closer, err = zipFiles(src)
	default:
		return nil, nil, fmt.Errorf("%w: %s is neither a directory nor a .tar.gz, .tgz, .tar or .zip archive", ErrInstall, src)
	}
	if err != nil {
		return nil, nil, err
	}
	return files, closer, nil
}

// sourceRoot returns the one top-level directory of files ("dir/"), or ""
// when they have none or several.
func sourceRoot(files []sourceFile) string {
	root := ""
	tops := map[string]bool{}
	for _, f := range files {
		if top, _, nested := strings.Cut(f.name, "/"); nested {
			tops[top] = true
		}
	}
	if len(tops) == 1 {
		for top := range tops {
			root = top + "/"
		}
	}
	return root
}

// topLevel maps the files that count, those at the top level or inside
// the one top-level directory, by their base names, and returns the names
// that follow the discovery grammar. Other files are recorded as ignored;
// a base name held twice is an error.
func (out *staged) topLevel(src string, files []sourceFile) (map[string]sourceFile, []string, error) {
	// Files count at the top level, or inside one top-level directory.
	root := sourceRoot(files)
	var binaries []string
	byBase := map[string]sourceFile{}
	for _, f := range files {
		rel := f.name
		switch {
		case !strings.Contains(rel, "/"): // top level
		case root != "" && strings.HasPrefix(rel, root) && !strings.Contains(rel[len(root):], "/"):
			rel = rel[len(root):]
		default:
			out.ignored = append(out.ignored, f.name)
			continue
		}
		if _, dup := byBase[rel]; dup {
			return nil, nil, fmt.Errorf("%w: %s holds %s twice", ErrInstall, src, rel)
		}
		byBase[rel] = f
		if _, ok := PluginNameFromFile(rel); ok {
			binaries = append(binaries, rel)
		}
	}
	return byBase, binaries, nil
}

// oneBinary returns the one plugin binary of src among binaries; none or
// several is an ErrInstall. With none, a file of ignored (deeper than one
// top-level directory, or beside files in other top-level directories)
// whose name follows the grammar is named, so the refusal says where the
// binary must be rather than that there is none.
func oneBinary(src string, binaries, ignored []string) (string, error) {
	sort.Strings(binaries)
	switch len(binaries) {
	case 0:
		var misplaced []string
		for _, name := range ignored {
			if _, ok := PluginNameFromFile(path.Base(name)); ok {
				misplaced = append(misplaced, name)
			}
		}
		if len(misplaced) > 0 {
			return "", fmt.Errorf("%w: %s holds %s where a plugin binary does not count: its files must be at the top level or inside one top-level directory (the archive has no other)",
				ErrInstall, src, strings.Join(misplaced, ", "))
		}
		return "", fmt.Errorf("%w: %s holds no plugin binary: its file must be named %s<name> (the signature beside it %s<name>%s)",
			ErrInstall, src, BinaryPrefix, BinaryPrefix, plugin.SignatureSuffix)
	case 1:
	default:
		return "", fmt.Errorf("%w: %s holds %d plugin binaries (%s); install one plugin per archive or directory",
			ErrInstall, src, len(binaries), strings.Join(binaries, ", "))
	}
	return binaries[0], nil
}

// copyWanted copies the binary and its sidecars among byBase into dir,
// each within its size limit, and records the other files as ignored.
func (out *staged) copyWanted(byBase map[string]sourceFile, dir string) error {
	wanted := map[string]int64{
		out.binary:                          MaxBinaryBytes,
		out.binary + plugin.SignatureSuffix: maxSidecarBytes,
		out.binary + ".sha256":              maxSidecarBytes,
		checksumsFile:                       maxSidecarBytes,
	}
	for rel, f := range byBase {
		limit, ok := wanted[rel]
		if !ok {
			out.ignored = append(out.ignored, f.name)
			continue
		}
		if f.size > limit {
			return fmt.Errorf("%w: %s is %d bytes, more than the %d allowed", ErrInstall, f.name, f.size, limit)
		}
		if err := copyOut(f, filepath.Join(dir, rel), limit); err != nil {
			return err
		}
		out.has[rel] = true
		out.from[rel] = f.name
	}
	return nil
}

// sourceName names the file rel of src as a person finds it: the path
// of a directory's file, or archive:member for an archive's. A file the
// source lacks (a missing signature) is named beside the binary.
func (out *staged) sourceName(src, rel string) string {
	name, ok := out.from[rel]
	if !ok {
		name = path.Join(path.Dir(out.from[out.binary]), rel)
	}
	if st, err := os.Stat(src); err == nil && st.IsDir() {
		return filepath.Join(src, filepath.FromSlash(name))
	}
	return src + ":" + name
}

// inSource rewrites a signature refusal about the staged copies in
// staging, which Install removes before it returns, to name the source's
// files instead.
func (out *staged) inSource(err error, src, staging string) error {
	var ue *plugin.UntrustedError
	if !errors.As(err, &ue) {
		return err
	}
	bin := filepath.Join(staging, out.binary)
	named := *ue
	named.Path = out.sourceName(src, out.binary)
	named.SignaturePath = out.sourceName(src, out.binary+plugin.SignatureSuffix)
	named.Detail = strings.NewReplacer(bin+plugin.SignatureSuffix, named.SignaturePath, bin, named.Path).Replace(ue.Detail)
	return &named
}

func hasSuffix(s string, suffixes ...string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(strings.ToLower(s), x) {
			return true
		}
	}
	return false
}

// copyOut writes f to dst (mode 0600), refusing more than limit bytes.
func copyOut(f sourceFile, dst string, limit int64) error {
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(w, io.LimitReader(r, limit+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("extracting %s: %w", f.name, err)
	}
	if n > limit {
		return fmt.Errorf("%w: %s is more than the %d bytes allowed", ErrInstall, f.name, limit)
	}
	return nil
}
