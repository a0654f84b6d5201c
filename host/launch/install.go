package launch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/obversa/obversa/internal/durable"
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
		return nil, found.inSource(err, src, staging)
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
	return placeInstalled(inst, dir, bin, sigPath)
}

// placeInstalled places the verified binary bin and its signature sigPath
// at inst.Path in dir, read-only. When the same bytes are already there it
// changes nothing and sets inst.AlreadyInstalled; other bytes under that
// name and version are an ErrInstall, since a version is never replaced.
func placeInstalled(inst *Installed, dir, bin, sigPath string) (*Installed, error) {
	st := inst.Statement
	if have, err := plugin.FileSHA256(inst.Path); err == nil {
		if have != inst.SHA256 {
			return nil, fmt.Errorf("%w: %s %s is already installed at %s with sha256 %s, not %s; a version is never replaced: remove %s first",
				ErrInstall, st.Name, st.Version, inst.Path, have, inst.SHA256, dir)
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
	if err := VerifyCached(st.Name, inst.Path, inst.SHA256); err != nil {
		return nil, err
	}
	return inst, durable.SyncDir(dir)
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
