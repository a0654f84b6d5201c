package launch

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/obversa/obversa/plugin"
)

// BinaryPrefix starts the file name of every distributed plugin binary:
// the discovery grammar is BinaryPrefix + <name>, optionally followed by
// ".exe", where <name> is [A-Za-z0-9][A-Za-z0-9_-]{0,127}
// (plugin.ValidPluginName). Nothing else in an archive or directory is
// ever taken for a binary.
const BinaryPrefix = "obversa-plugin-"

// Size limits of what Install reads from a source.
const (
	// MaxBinaryBytes bounds a plugin binary: 1 GiB.
	MaxBinaryBytes = 1 << 30
	// maxSidecarBytes bounds a signature or checksum file: 1 MiB.
	maxSidecarBytes = 1 << 20
)

// checksumsFile is the release-wide checksum file a source may carry.
const checksumsFile = "SHA256SUMS"

// PluginNameFromFile returns the plugin name of a file named by the
// discovery grammar (BinaryPrefix + name [+ ".exe"]) and whether base
// follows it. A signature or checksum file never does.
func PluginNameFromFile(base string) (string, bool) {
	name, ok := strings.CutPrefix(strings.TrimSuffix(base, ".exe"), BinaryPrefix)
	if !ok || !plugin.ValidPluginName(name) {
		return "", false
	}
	return name, true
}

// InstallOptions configures Install.
type InstallOptions struct {
	// Dir is the plugins directory; each plugin is placed in
	// Dir/<name>/<version>/. Required.
	Dir string
	// Keys, when not empty, must include the key that signed the binary.
	// When empty the signature is only checked for form and digest, which
	// proves integrity, not origin.
	Keys []plugin.PublicKey
	// GOOS and GOARCH are the platform the binary must be signed for;
	// empty means this machine's.
	GOOS, GOARCH string
}

// Installed describes an installed plugin.
type Installed struct {
	// Path is the installed binary, Dir/<name>/<version>/<file>, absolute.
	Path string
	// SHA256 is its digest (lower-case hex).
	SHA256 string
	// Statement is the signed statement.
	Statement plugin.Statement
	// KeyID is the trusted key that signed it; empty when no key was given.
	KeyID string
	// AlreadyInstalled is true when the same bytes were already in place.
	AlreadyInstalled bool
	// Ignored lists the source's files that are not part of the plugin
	// (README, LICENSE, files in nested directories, …), sorted.
	Ignored []string
}

// Install verifies a distributed plugin and places it in the plugins
// directory (docs/plugins.md). src is a directory or an archive (.tar.gz, .tgz,
// .tar or .zip). Its files are considered at the top level, or inside a
// single top-level directory: exactly one must follow the discovery
// grammar (BinaryPrefix + name), and it must have its minisign signature
// beside it (<file>.minisig). An optional <file>.sha256 or SHA256SUMS
// sidecar must agree with the binary. Signature and checksum files are
// only read, never executed; links, devices and paths leaving the source
// are refused.
//
// The signature must verify with one of o.Keys (when given), its
// statement must name the binary's SHA-256, the name in the file name and
// this platform (o.GOOS/o.GOARCH). The binary is then written read-only,
// with its signature, to o.Dir/<name>/<version>/, atomically; installing
// the same bytes again changes nothing. Errors: ErrInstall for a source it
// cannot install, *plugin.UntrustedError (PLUGIN_UNTRUSTED) for a
// signature problem, *plugin.DigestMismatchError for a checksum sidecar
// that disagrees, or I/O errors.
func Install(src string, o InstallOptions) (*Installed, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("%w: no plugins directory", ErrInstall)
	}
	// The installed path goes into run files, which resolve relative
	// paths against their own directory: make it absolute.
	dirAbs, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dirAbs
	goos, goarch := o.GOOS, o.GOARCH
	if goos == "" {
		goos = runtime.GOOS
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	if err = os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	staging, err := os.MkdirTemp(o.Dir, ".staging-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)

	found, err := stage(src, staging)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(staging, found.binary)
	sigPath := bin + plugin.SignatureSuffix
	inst := &Installed{Ignored: found.ignored}
	v, err := checkStaged(bin, sigPath, o.Keys)
	if err != nil {
		return nil, err
	}
	inst.SHA256, inst.Statement, inst.KeyID = v.SHA256, v.Statement, v.KeyID
	st := v.Statement
	if name, _ := PluginNameFromFile(found.binary); name != st.Name {
		return nil, fmt.Errorf("%w: %s is signed as plugin %q; a signed binary keeps its name (%s%s)", ErrInstall, found.binary, st.Name, BinaryPrefix, st.Name)
	}
	if st.OS != goos || st.Arch != goarch {
		return nil, fmt.Errorf("%w: %s %s is signed for %s; this machine is %s/%s", ErrInstall, st.Name, st.Version, st.Platform(), goos, goarch)
	}
	if err := checkSums(found, staging, v.SHA256); err != nil {
		return nil, err
	}

	dir := filepath.Join(o.Dir, st.Name, st.Version)
	inst.Path = filepath.Join(dir, found.binary)
	if have, err := plugin.FileSHA256(inst.Path); err == nil {
		if have != v.SHA256 {
			return nil, fmt.Errorf("%w: %s %s is already installed at %s with sha256 %s, not %s; a version is never replaced: remove %s first",
				ErrInstall, st.Name, st.Version, inst.Path, have, v.SHA256, dir)
		}
		inst.AlreadyInstalled = true
		return inst, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := place(sigPath, inst.Path+plugin.SignatureSuffix, 0o444); err != nil {
		return nil, err
	}
	if err := place(bin, inst.Path, 0o555); err != nil {
		return nil, err
	}
	// The bytes placed are the bytes verified: the rename is atomic and
	// the staged file was read-only to everyone but this process.
	if err := VerifyCached(st.Name, inst.Path, v.SHA256); err != nil {
		return nil, err
	}
	return inst, syncDir(dir)
}

// checkStaged verifies the staged binary's signature: against keys when
// given, otherwise only its form and digest.
func checkStaged(bin, sigPath string, keys []plugin.PublicKey) (*plugin.Verified, error) {
	if len(keys) > 0 {
		return plugin.VerifySignature(bin, sigPath, keys)
	}
	untrusted := func(reason plugin.UntrustedReason, err error, detail string) error {
		return &plugin.UntrustedError{Path: bin, SignaturePath: sigPath, Reason: reason, Detail: detail, Err: err}
	}
	text, err := os.ReadFile(sigPath)
	if err != nil {
		return nil, untrusted(plugin.ReasonUnsigned, err, "the source has no signature "+filepath.Base(sigPath))
	}
	sig, err := plugin.ParseSignature(text)
	if err != nil {
		return nil, untrusted(plugin.ReasonMalformed, err, err.Error())
	}
	st, err := plugin.ParseStatement(sig.TrustedComment)
	if err != nil {
		return nil, untrusted(plugin.ReasonMalformed, err, "the trusted comment is not a plugin statement: "+err.Error())
	}
	actual, err := plugin.FileSHA256(bin)
	if err != nil {
		return nil, err
	}
	if st.SHA256 != actual {
		return nil, untrusted(plugin.ReasonDigest, nil, fmt.Sprintf("the signature vouches for sha256 %s, but the binary has sha256 %s", st.SHA256, actual))
	}
	return &plugin.Verified{Statement: st, SHA256: actual}, nil
}

// checkSums compares the binary's digest with the checksum sidecars the
// source carries, if any.
func checkSums(found *staged, staging, actual string) error {
	for _, side := range []struct{ file, entry string }{
		{found.binary + ".sha256", ""},
		{checksumsFile, found.binary},
	} {
		if !found.has[side.file] {
			continue
		}
		text, err := os.ReadFile(filepath.Join(staging, side.file))
		if err != nil {
			return err
		}
		sums, err := plugin.ParseChecksums(text)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInstall, side.file, err)
		}
		want, ok := sums[side.entry]
		if !ok && side.entry == "" {
			want, ok = sums[found.binary]
		}
		if !ok {
			if side.file == checksumsFile {
				continue // a release-wide file may not list this binary
			}
			return fmt.Errorf("%w: %s does not list %s", ErrInstall, side.file, found.binary)
		}
		if want != actual {
			return &plugin.DigestMismatchError{Name: found.binary, Path: side.file, Expected: want, Actual: actual}
		}
	}
	return nil
}

// place copies src to dst with mode perm through a synced temporary file
// in dst's directory and a rename.
func place(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// staged is what stage found in a source.
type staged struct {
	// binary is the base name of the one plugin binary.
	binary string
	// has holds the base names of the files staged beside it.
	has     map[string]bool
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
	st, err := os.Stat(src)
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("%w: %s is neither a directory nor a .tar.gz, .tgz, .tar or .zip archive", ErrInstall, src)
	}
	if err != nil {
		return nil, err
	}
	defer closer()
	// Files count at the top level, or inside one top-level directory.
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
	var binaries []string
	byBase := map[string]sourceFile{}
	out := &staged{has: map[string]bool{}}
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
			return nil, fmt.Errorf("%w: %s holds %s twice", ErrInstall, src, rel)
		}
		byBase[rel] = f
		if _, ok := PluginNameFromFile(rel); ok {
			binaries = append(binaries, rel)
		}
	}
	sort.Strings(binaries)
	switch len(binaries) {
	case 0:
		return nil, fmt.Errorf("%w: %s holds no plugin binary: its file must be named %s<name> (the signature beside it %s<name>%s)",
			ErrInstall, src, BinaryPrefix, BinaryPrefix, plugin.SignatureSuffix)
	case 1:
	default:
		return nil, fmt.Errorf("%w: %s holds %d plugin binaries (%s); install one plugin per archive or directory",
			ErrInstall, src, len(binaries), strings.Join(binaries, ", "))
	}
	out.binary = binaries[0]
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
			return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d allowed", ErrInstall, f.name, f.size, limit)
		}
		if err := copyOut(f, filepath.Join(dir, rel), limit); err != nil {
			return nil, err
		}
		out.has[rel] = true
	}
	sort.Strings(out.ignored)
	return out, nil
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

// dirFiles lists the regular files of a directory, two levels deep.
// Links and other non-regular files are skipped.
func dirFiles(dir string) ([]sourceFile, error) {
	var out []sourceFile
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := path.Join(rel, e.Name())
			switch {
			case e.IsDir() && depth == 0:
				if err := walk(name, 1); err != nil {
					return err
				}
			case e.Type().IsRegular():
				info, err := e.Info()
				if err != nil {
					return err
				}
				full := filepath.Join(dir, filepath.FromSlash(name))
				out = append(out, sourceFile{name: name, size: info.Size(), open: func() (io.ReadCloser, error) { return os.Open(full) }})
			}
		}
		return nil
	}
	return out, walk("", 0)
}

// cleanName checks an archive member's name: relative, no "..", no
// backslashes; it returns the cleaned slash path.
func cleanName(name string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(name, "./"))
	if name == "" || path.IsAbs(name) || strings.Contains(name, `\`) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: archive member %q leaves the archive", ErrInstall, name)
	}
	return clean, nil
}

// tarFiles lists the regular files of a tar archive. A tar archive is
// read once, so the members are buffered: small ones in memory, others in
// temporary files under tmp (bounded by MaxBinaryBytes each).
func tarFiles(src string, gz bool, tmp string) ([]sourceFile, error) {
	f, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if gz {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInstall, src, err)
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	var out []sourceFile
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInstall, src, err)
		}
		name, err := cleanName(h.Name)
		if err != nil {
			return nil, err
		}
		switch h.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir:
			continue
		default:
			return nil, fmt.Errorf("%w: archive member %q is not a regular file or directory (links are refused)", ErrInstall, h.Name)
		}
		if strings.Count(name, "/") > 1 || !mayBeWanted(path.Base(name)) {
			// Listed so that it is reported as ignored; never read.
			out = append(out, sourceFile{name: name, size: h.Size})
			continue
		}
		if h.Size > MaxBinaryBytes {
			return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d allowed", ErrInstall, h.Name, h.Size, int64(MaxBinaryBytes))
		}
		if h.Size <= maxSidecarBytes {
			b, err := io.ReadAll(io.LimitReader(tr, maxSidecarBytes+1))
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrInstall, h.Name, err)
			}
			out = append(out, sourceFile{name: name, size: int64(len(b)), open: func() (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(b)), nil
			}})
			continue
		}
		spool := filepath.Join(tmp, fmt.Sprintf(".member-%d", i))
		w, err := os.OpenFile(spool, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		n, err := io.Copy(w, io.LimitReader(tr, MaxBinaryBytes+1))
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInstall, h.Name, err)
		}
		out = append(out, sourceFile{name: name, size: n, open: func() (io.ReadCloser, error) { return os.Open(spool) }})
	}
}

// zipFiles lists the regular files of a zip archive; the returned func
// closes it once the files have been read.
func zipFiles(src string) ([]sourceFile, func() error, error) {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrInstall, src, err)
	}
	var out []sourceFile
	for _, zf := range zr.File {
		name, err := cleanName(zf.Name)
		if err != nil {
			zr.Close()
			return nil, nil, err
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			continue
		case !mode.IsRegular():
			zr.Close()
			return nil, nil, fmt.Errorf("%w: archive member %q is not a regular file or directory (links are refused)", ErrInstall, zf.Name)
		}
		out = append(out, sourceFile{name: name, size: int64(zf.UncompressedSize64), open: zf.Open})
	}
	return out, zr.Close, nil
}

// mayBeWanted reports whether a file's base name could be a plugin binary
// or one of its sidecars, so that an archive member is worth reading.
func mayBeWanted(base string) bool {
	if base == checksumsFile {
		return true
	}
	for _, suffix := range []string{plugin.SignatureSuffix, ".sha256"} {
		base = strings.TrimSuffix(base, suffix)
	}
	_, ok := PluginNameFromFile(base)
	return ok
}
