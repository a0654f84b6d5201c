package plugin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Statement is what a plugin signature vouches for, carried in the
// signature's trusted comment (docs/plugins.md): which plugin, which version,
// for which protocol and platform, and the exact bytes by SHA-256.
//
// The trusted comment is a tab-separated list of key:value fields, in the
// style of the reference minisign tool's "timestamp:…<TAB>file:…":
//
//	timestamp:1767225600	file:obversa-plugin-cmd	obversa-plugin:cmd	version:0.1.0	protocol:1	os:linux	arch:amd64	sha256:<64 hex>
//
// obversa-plugin, version, protocol, os, arch and sha256 are required;
// timestamp and file are optional; unknown keys are ignored so that later
// versions may add fields; a key given twice is an error.
type Statement struct {
	// Name is the plugin's name: [A-Za-z0-9][A-Za-z0-9_-]{0,127} (the id
	// grammar without dots, so that it is also a file name part).
	Name string
	// Version is the plugin's version: [A-Za-z0-9][A-Za-z0-9.+_-]{0,63}.
	Version string
	// Protocol is the plugin protocol major version it speaks (≥ 1).
	Protocol int
	// OS and Arch are the GOOS and GOARCH the binary was built for.
	OS   string
	Arch string
	// SHA256 is the binary's digest, 64 lower-case hex digits.
	SHA256 string
	// File is the base name of the file that was signed; informational,
	// empty when absent.
	File string
	// Timestamp is when the statement was signed, whole seconds; zero when
	// absent.
	Timestamp time.Time
}

// Statement field keys.
const (
	stmtTimestamp = "timestamp"
	stmtFile      = "file"
	stmtName      = "obversa-plugin"
	stmtVersion   = "version"
	stmtProtocol  = "protocol"
	stmtOS        = "os"
	stmtArch      = "arch"
	stmtSHA256    = "sha256"
)

// Grammars of the statement's fields.
var (
	namePattern    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`) })
	versionPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$`) })
	platformWord   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]{1,32}$`) })
	sha256Pattern  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
)

// ValidPluginName reports whether name is a valid signed plugin name:
// [A-Za-z0-9][A-Za-z0-9_-]{0,127}. It differs from ValidDescribedName (a
// run file's label, which may hold '.') on purpose: a signed name is also
// a file name of a release (obversa-plugin-<name>, beside <name>.sig and
// .exe), where a '.' would make "obversa-plugin-x.sig" read as the plugin
// "x.sig" (docs/decisions.md, "Two plugin name rules").
func ValidPluginName(name string) bool { return namePattern().MatchString(name) }

// Validate checks every field's grammar; a violation wraps ErrStatement.
func (s Statement) Validate() error {
	bad := func(field, value, want string) error {
		return fmt.Errorf("%w: %s %q is not %s", ErrStatement, field, value, want)
	}
	switch {
	case !namePattern().MatchString(s.Name):
		return bad("name", s.Name, "[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
	case !versionPattern().MatchString(s.Version):
		return bad("version", s.Version, "[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}")
	case s.Protocol < 1:
		return bad("protocol", strconv.Itoa(s.Protocol), "a positive integer")
	case !platformWord().MatchString(s.OS):
		return bad("os", s.OS, "a GOOS value")
	case !platformWord().MatchString(s.Arch):
		return bad("arch", s.Arch, "a GOARCH value")
	case !sha256Pattern().MatchString(s.SHA256):
		return bad("sha256", s.SHA256, "64 lower-case hex digits")
	case strings.ContainsFunc(s.File, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return bad("file", s.File, "free of control characters")
	case !s.Timestamp.IsZero() && s.Timestamp.Unix() < 0:
		return bad("timestamp", s.Timestamp.String(), "after 1970")
	}
	return nil
}

// TrustedComment renders the statement as a trusted comment. It does not
// validate; Sign does.
func (s Statement) TrustedComment() string {
	var f []string
	if !s.Timestamp.IsZero() {
		f = append(f, stmtTimestamp+":"+strconv.FormatInt(s.Timestamp.Unix(), 10))
	}
	if s.File != "" {
		f = append(f, stmtFile+":"+s.File)
	}
	f = append(f,
		stmtName+":"+s.Name,
		stmtVersion+":"+s.Version,
		stmtProtocol+":"+strconv.Itoa(s.Protocol),
		stmtOS+":"+s.OS,
		stmtArch+":"+s.Arch,
		stmtSHA256+":"+s.SHA256,
	)
	return strings.Join(f, "\t")
}

// Platform returns "os/arch".
func (s Statement) Platform() string { return s.OS + "/" + s.Arch }

// ParseStatement decodes a trusted comment written by TrustedComment (see
// Statement for the grammar) and validates it. Errors wrap ErrStatement.
func ParseStatement(comment string) (Statement, error) {
	var s Statement
	seen := map[string]bool{}
	for _, field := range strings.Split(comment, "\t") {
		key, value, ok := strings.Cut(field, ":")
		if !ok {
			return Statement{}, fmt.Errorf("%w: field %q is not key:value", ErrStatement, field)
		}
		if seen[key] {
			return Statement{}, fmt.Errorf("%w: field %q appears twice", ErrStatement, key)
		}
		seen[key] = true
		switch key {
		case stmtTimestamp:
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 || strconv.FormatInt(n, 10) != value {
				return Statement{}, fmt.Errorf("%w: timestamp %q is not a Unix time in seconds", ErrStatement, value)
			}
			s.Timestamp = time.Unix(n, 0).UTC()
		case stmtFile:
			s.File = value
		case stmtName:
			s.Name = value
		case stmtVersion:
			s.Version = value
		case stmtProtocol:
			n, err := strconv.Atoi(value)
			if err != nil || strconv.Itoa(n) != value {
				return Statement{}, fmt.Errorf("%w: protocol %q is not an integer", ErrStatement, value)
			}
			s.Protocol = n
		case stmtOS:
			s.OS = value
		case stmtArch:
			s.Arch = value
		case stmtSHA256:
			s.SHA256 = value
		}
	}
	for _, k := range []string{stmtName, stmtVersion, stmtProtocol, stmtOS, stmtArch, stmtSHA256} {
		if !seen[k] {
			return Statement{}, fmt.Errorf("%w: no %s field", ErrStatement, k)
		}
	}
	if s.File == "" && seen[stmtFile] {
		return Statement{}, fmt.Errorf("%w: empty file field", ErrStatement)
	}
	if err := s.Validate(); err != nil {
		return Statement{}, err
	}
	return s, nil
}
