package hcl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/obversa/obversa/internal/regfile"
)

// LockFileName is the name of the lock file kept beside a run file.
const LockFileName = "obversa.lock.hcl"

// lockHeader is the first line EncodeLockFile writes.
const lockHeader = `# This file is maintained by "obversa plugin lock". Manual edits may be lost.`

// keyIDPattern matches a minisign key id: 8 bytes in hex.
var keyIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9A-Fa-f]{16}$`) })

// signaturePattern matches the digest of a .minisig file.
var signaturePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })

// LockFile is a decoded obversa.lock.hcl (docs/plugins.md): the pinned digest,
// and optionally the signature, of each plugin binary.
type LockFile struct {
	// Plugins are sorted by Name, one entry per name.
	Plugins []LockedPlugin
}

// LockedPlugin is one `plugin "<name>"` block of the lock file.
type LockedPlugin struct {
	// Name is the plugin's name in the run file (the id grammar).
	Name string
	// Path is the binary's path as recorded by `obversa plugin lock`: as
	// the run file writes it, so relative to the lock file's directory
	// unless written absolute (Plugin.LockPath). It is informational:
	// SHA256 is what binds.
	Path string
	// SHA256 is the binary's SHA-256 digest, 64 lower-case hex digits.
	SHA256 string
	// KeyID is the minisign key id of the signature, 16 upper-case hex
	// digits, or "" when the binary is not signed. Decoding accepts
	// either case and normalises to upper case.
	KeyID string
	// Signature is "sha256:<hex>", the SHA-256 of the binary's .minisig
	// file, or "" when the binary is not signed. KeyID and Signature are
	// both set or both empty.
	Signature string
}

// LockFilePath returns the path of the lock file for a run file: the file
// LockFileName in the same directory.
func LockFilePath(runFile string) string {
	return filepath.Join(filepath.Dir(runFile), LockFileName)
}

// LinkedLockNote says, for a run file that is a symbolic link, where its
// lock file is read: beside the link (LockFilePath), never beside the
// file it points to, as its relative paths are. It is "" for a run file
// that is no link; otherwise a clause for the end of a message about the
// lock file, naming the link's target and, when one is there, the lock
// file beside it that is not read.
// validate's warning and run's refusal of an unpinned plugin both end
// with it (docs/run-file.md, "Paths").
func LinkedLockNote(runFile string) string {
	fi, err := os.Lstat(runFile)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return ""
	}
	target, err := filepath.EvalSymlinks(runFile)
	if err != nil {
		return ""
	}
	dir, err := filepath.Abs(filepath.Dir(runFile))
	if err != nil {
		dir = filepath.Dir(runFile)
	}
	note := fmt.Sprintf("%s is a symbolic link to %s, and its lock file is read beside the link, in %s, not beside %s",
		runFile, target, dir, target)
	if other := LockFilePath(target); other != LockFilePath(runFile) {
		if _, err := os.Stat(other); err == nil {
			note += fmt.Sprintf(" (%s is not read: copy it beside the link, or name the run file itself)", other)
		}
	}
	return note
}

// LockPath returns the path the lock file records for a plugin: the path
// as the run file writes it (WrittenPath), so a run file written with
// relative paths gets a lock file with the same relative paths, which
// stays true wherever the two are checked out together (docs/run-file.md).
// The lock file lives beside the run file, so both are relative to the
// same directory. A Plugin not produced by Decode (no WrittenPath) gives
// its absolute Path.
func (p *Plugin) LockPath() string {
	if p.WrittenPath != "" {
		return p.WrittenPath
	}
	return p.Path
}

// Lookup returns the entry for a plugin name.
func (l *LockFile) Lookup(name string) (LockedPlugin, bool) {
	i := sort.Search(len(l.Plugins), func(i int) bool { return l.Plugins[i].Name >= name })
	if i < len(l.Plugins) && l.Plugins[i].Name == name {
		return l.Plugins[i], true
	}
	return LockedPlugin{}, false
}

// Set adds p, or replaces the entry with the same name, keeping Plugins
// sorted by name.
func (l *LockFile) Set(p LockedPlugin) {
	i := sort.Search(len(l.Plugins), func(i int) bool { return l.Plugins[i].Name >= p.Name })
	if i < len(l.Plugins) && l.Plugins[i].Name == p.Name {
		l.Plugins[i] = p
		return
	}
	l.Plugins = append(l.Plugins, LockedPlugin{})
	copy(l.Plugins[i+1:], l.Plugins[i:])
	l.Plugins[i] = p
}

// EncodeLockFile renders a lock file: the header comment, then one plugin
// block per entry sorted by name, formatted by hclwrite. Equal inputs give
// byte-identical outputs. Optional attributes that are empty are omitted.
func EncodeLockFile(l *LockFile) []byte {
	plugins := append([]LockedPlugin(nil), l.Plugins...)
	sort.SliceStable(plugins, func(i, j int) bool { return plugins[i].Name < plugins[j].Name })
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{
		{Type: hclsyntax.TokenComment, Bytes: []byte(lockHeader + "\n")},
	})
	for _, p := range plugins {
		body.AppendNewline()
		blk := body.AppendNewBlock("plugin", []string{p.Name}).Body()
		blk.SetAttributeValue("path", cty.StringVal(p.Path))
		blk.SetAttributeValue("sha256", cty.StringVal(p.SHA256))
		if p.KeyID != "" {
			blk.SetAttributeValue("key_id", cty.StringVal(strings.ToUpper(p.KeyID)))
		}
		if p.Signature != "" {
			blk.SetAttributeValue("signature", cty.StringVal(p.Signature))
		}
	}
	return hclwrite.Format(f.Bytes())
}

// DecodeLockFile reads and decodes a lock file; see DecodeLock. A file
// that does not exist is an empty LockFile without diagnostics; a
// symbolic link to a missing target, and any other read failure, is an
// error diagnostic naming the file (and the target).
func DecodeLockFile(path string) (*LockFile, hclv2.Diagnostics) {
	src, err := regfile.Read(path, MaxRunFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		// A symlink whose target is gone is not "no lock file": the pins
		// it was meant to hold would be silently ignored.
		target, lerr := os.Readlink(path)
		if lerr != nil {
			return &LockFile{}, nil
		}
		return nil, hclv2.Diagnostics{{
			Severity: hclv2.DiagError,
			Summary:  "Lock file is a dangling symlink",
			Detail: fmt.Sprintf("%s is a symbolic link to %s, which does not exist. Restore the target, or remove the link and run `obversa plugin lock` again.",
				path, target),
		}}
	}
	if d, ok := fileTooLarge("Lock file", path, path, err, MaxRunFileBytes,
		"delete it and run `obversa plugin lock` again, which writes one entry per plugin"); ok {
		return nil, hclv2.Diagnostics{d}
	}
	if err != nil {
		return nil, hclv2.Diagnostics{{
			Severity: hclv2.DiagError,
			Summary:  "Cannot read lock file",
			Detail:   fmt.Sprintf("Reading %s failed: %v. Check its permissions, or delete it and run `obversa plugin lock` again.", path, unwrapPathError(err)),
		}}
	}
	return DecodeLock(src, path)
}

// lockSchema is the top level of a lock file.
var lockSchema = &hclv2.BodySchema{
	Blocks: []hclv2.BlockHeaderSchema{{Type: "plugin", LabelNames: []string{"name"}}},
}

// DecodeLock parses and validates lock-file source; filename names it in
// diagnostics. Each plugin block needs path and a lower-case hex sha256;
// key_id (16 hex digits) and signature ("sha256:<64 hex>") are optional
// but go together; names follow the id grammar and are unique. The result
// is nil if and only if the diagnostics contain an error.
func DecodeLock(src []byte, filename string) (*LockFile, hclv2.Diagnostics) {
	file, diags := parseConfig(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	d := &decoder{filename: filename, src: src, diags: diags}
	content, cdiags := file.Body.Content(lockSchema)
	d.diags = append(d.diags, cdiags...)
	l := &LockFile{}
	for _, blk := range content.Blocks {
		if p, ok := d.lockedPlugin(blk); ok {
			if _, dup := l.Lookup(p.Name); !dup {
				l.Set(p)
			}
		}
	}
	d.uniqueNames("plugin", content.Blocks)
	if d.diags.HasErrors() {
		return nil, d.diags
	}
	return l, d.diags
}

// lockFix is appended to lock-file diagnostics.
const lockFix = " Run `obversa plugin lock` to rewrite the lock file."

// lockedPlugin decodes one plugin block of the lock file.
func (d *decoder) lockedPlugin(blk *hclv2.Block) (LockedPlugin, bool) {
	p := LockedPlugin{Name: blk.Labels[0]}
	before := len(d.diags.Errs())
	d.checkName("plugin", p.Name, blk.LabelRanges[0])
	attrs := d.attrs(blk.Body.(*hclsyntax.Body), "path", "sha256", "key_id", "signature")
	if a := d.required(attrs, "path", blk, `path = "<plugin binary>"`+"."+lockFix); a != nil {
		p.Path, _ = d.nonEmptyStr(a, `the plugin binary's path`)
	}
	if a := d.required(attrs, "sha256", blk, `sha256 = "<64 lower-case hex digits>"`+"."+lockFix); a != nil {
		if s, ok := d.str(a, "64 lower-case hex digits"); ok {
			if hexPattern64().MatchString(s) {
				p.SHA256 = s
			} else {
				d.errorAt(a.Expr.Range(), "Invalid sha256 digest",
					"sha256 must be exactly 64 lower-case hex digits (the SHA-256 of the plugin binary)."+lockFix)
			}
		}
	}
	keyA, sigA := attrs["key_id"], attrs["signature"]
	if keyA != nil {
		if s, ok := d.str(keyA, "16 hex digits"); ok {
			if keyIDPattern().MatchString(s) {
				p.KeyID = strings.ToUpper(s)
			} else {
				d.errorAt(keyA.Expr.Range(), "Invalid key_id",
					"key_id must be the minisign key id: exactly 16 hex digits, as printed by `obversa plugin keygen`."+lockFix)
			}
		}
	}
	if sigA != nil {
		if s, ok := d.str(sigA, `"sha256:<64 hex digits>"`); ok {
			if signaturePattern().MatchString(s) {
				p.Signature = s
			} else {
				d.errorAt(sigA.Expr.Range(), "Invalid signature",
					`signature must be "sha256:" followed by 64 lower-case hex digits (the SHA-256 of the binary's .minisig file).`+lockFix)
			}
		}
	}
	switch {
	case keyA != nil && sigA == nil:
		d.errorAt(keyA.NameRange, "key_id without signature",
			"A signed plugin records both key_id and signature; add signature = \"sha256:…\" or remove key_id."+lockFix)
	case sigA != nil && keyA == nil:
		d.errorAt(sigA.NameRange, "signature without key_id",
			"A signed plugin records both key_id and signature; add key_id = \"…\" or remove signature."+lockFix)
	}
	return p, len(d.diags.Errs()) == before
}
