package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// Encode returns the JSON form of s (an anchor), compact, fields in
// declaration order, without a trailing newline. It returns an error
// wrapping ErrInvalidSnapshot when s breaks the rules Decode enforces, so
// that nothing Encode writes is refused when read back.
func Encode(s *Snapshot) ([]byte, error) {
	if err := validate(s); err != nil {
		return nil, err
	}
	c := *s
	if c.Manifest == nil {
		c.Manifest = []Entry{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		return nil, fmt.Errorf("workspace: encode snapshot: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Decode parses and validates an anchor written by Encode. Any deviation —
// an unknown, duplicate, differently-cased or missing field, a value of the
// wrong type, trailing data, or a snapshot that breaks the rules in the
// package documentation (sorted unique clean paths, valid modes, lowercase
// hex hashes, Files equal to the manifest length, a digest that matches the
// manifest) — is an error wrapping ErrInvalidSnapshot
// (WORKSPACE_ANCHOR_INVALID).
func Decode(b []byte) (*Snapshot, error) {
	if err := checkShape(b); err != nil {
		return nil, invalidf("%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		return nil, invalidf("%v", err)
	}
	if s.Manifest == nil {
		s.Manifest = []Entry{}
	}
	if err := validate(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Field names, exactly as Encode writes them. encoding/json matches names
// case-insensitively and keeps the last of duplicates; checkShape refuses
// both before it runs.
var (
	snapshotFields = []field{{"provider", true}, {"root", true}, {"digest", true}, {"files", true}, {"head", false}, {"manifest", true}}
	entryFields    = []field{{"path", true}, {"mode", true}, {"size", true}, {"sha256", true}}
)

// field is a JSON field name and whether it must be present.
type field struct {
	name     string
	required bool
}

// checkShape walks the JSON tokens of b and checks the structure
// encoding/json would gloss over: exact and unique field names, required
// fields present, no nesting beyond the schema, nothing after the object.
// Value types are left to the decoder.
func checkShape(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	err := walkObject(dec, "snapshot", snapshotFields, func(key string) error {
		if key == "manifest" {
			return walkManifest(dec)
		}
		return walkScalar(dec, key)
	})
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the snapshot object")
	}
	return nil
}

// walkObject reads one object whose field names must be among fields,
// calling value to read each value.
func walkObject(dec *json.Decoder, what string, fields []field, value func(key string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("%s: want an object", what)
	}
	seen := make(map[string]bool, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		key, _ := tok.(string)
		if !slices.ContainsFunc(fields, func(f field) bool { return f.name == key }) {
			return fmt.Errorf("%s: unknown field %q", what, key)
		}
		if seen[key] {
			return fmt.Errorf("%s: duplicate field %q", what, key)
		}
		seen[key] = true
		if err := value(key); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, f := range fields {
		if f.required && !seen[f.name] {
			return fmt.Errorf("%s: missing field %q", what, f.name)
		}
	}
	return nil
}

// walkManifest reads the manifest: null or an array of entry objects.
func walkManifest(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if tok == nil {
		return nil
	}
	if tok != json.Delim('[') {
		return errors.New("manifest: want an array")
	}
	for i := 0; dec.More(); i++ {
		what := fmt.Sprintf("manifest[%d]", i)
		if err := walkObject(dec, what, entryFields, func(key string) error {
			return walkScalar(dec, what+"."+key)
		}); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return fmt.Errorf("manifest: %w", err)
	}
	return nil
}

// walkScalar reads one value that must not be an object or array.
func walkScalar(dec *json.Decoder, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, ok := tok.(json.Delim); ok {
		return fmt.Errorf("%s: want a string or number", what)
	}
	return nil
}

// validate checks every rule of a snapshot; errors wrap ErrInvalidSnapshot.
func validate(s *Snapshot) error {
	if s == nil {
		return invalidf("no snapshot")
	}
	switch s.Provider {
	case ProviderGit, ProviderFiles, ProviderNone:
	default:
		return invalidf("unknown provider %q", s.Provider)
	}
	if !utf8.ValidString(s.Root) || strings.ContainsRune(s.Root, 0) || !filepath.IsAbs(s.Root) || filepath.Clean(s.Root) != s.Root {
		return invalidf("root %q is not an absolute clean path", s.Root)
	}
	if s.Files != len(s.Manifest) {
		return invalidf("files is %d but the manifest has %d entries", s.Files, len(s.Manifest))
	}
	switch s.Provider {
	case ProviderNone:
		if len(s.Manifest) != 0 || s.Digest != "" || s.Head != "" {
			return invalidf("a %q snapshot has no manifest, digest or head", ProviderNone)
		}
		return nil
	case ProviderFiles:
		if s.Head != "" {
			return invalidf("a %q snapshot has no head", ProviderFiles)
		}
	case ProviderGit:
		if s.Head != "" && !isLowerHex(s.Head, 40) && !isLowerHex(s.Head, 64) {
			return invalidf("head %q is not a commit id (40 or 64 lowercase hex digits)", s.Head)
		}
	}
	for i, e := range s.Manifest {
		if err := validateEntry(e); err != nil {
			return invalidf("manifest[%d]: %v", i, err)
		}
		if i > 0 && s.Manifest[i-1].Path >= e.Path {
			return invalidf("manifest[%d]: path %q is not after %q (paths must be sorted and unique)", i, e.Path, s.Manifest[i-1].Path)
		}
	}
	hexDigest, ok := strings.CutPrefix(s.Digest, "sha256:")
	if !ok || !isLowerHex(hexDigest, 64) {
		return invalidf("digest %q is not sha256:<64 lowercase hex digits>", s.Digest)
	}
	if want := manifestDigest(s.Manifest); s.Digest != want {
		return invalidf("digest %s does not match the manifest (%s)", s.Digest, want)
	}
	return nil
}

// validateEntry checks one manifest entry.
func validateEntry(e Entry) error {
	if e.Path == "." || !fs.ValidPath(e.Path) || strings.ContainsRune(e.Path, 0) {
		return fmt.Errorf("path %q is not a clean relative slash-separated path", e.Path)
	}
	if hiddenByState(e.Path) {
		return fmt.Errorf("path %q lies in a %s or %s directory, which snapshots skip", e.Path, gitDirName, stateDirName)
	}
	switch e.Mode & modeTypeMask {
	case ModeRegular:
		if e.Mode&^(modeTypeMask|modePermMask) != 0 {
			return fmt.Errorf("path %q: mode %o has unknown bits", e.Path, e.Mode)
		}
	case ModeSymlink:
		if e.Mode != ModeSymlink {
			return fmt.Errorf("path %q: symlink mode %o is not %o", e.Path, e.Mode, ModeSymlink)
		}
	default:
		return fmt.Errorf("path %q: mode %o is neither a regular file nor a symlink", e.Path, e.Mode)
	}
	if e.Size < 0 {
		return fmt.Errorf("path %q: negative size %d", e.Path, e.Size)
	}
	if !isLowerHex(e.SHA256, 64) {
		return fmt.Errorf("path %q: sha256 %q is not 64 lowercase hex digits", e.Path, e.SHA256)
	}
	return nil
}

// isLowerHex reports whether s is exactly n lowercase hex digits.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
