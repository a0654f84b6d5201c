package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

// FuzzCleanPath: whatever the request target, a path cleanPath lets
// through is absolute, clean, has no ".." segment and no encoded slash.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/runs/r1", "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/assets/..%2f..%2fx",
		"/a//b", "/a/./b", "/a\\..\\b", "/%00", "//evil", "/assets/vendor/mermaid.min.js"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		if !cleanPath(u) {
			return
		}
		p := u.Path
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.Contains(strings.ToLower(u.RawPath), "%2f") {
			t.Fatalf("cleanPath let %q through (path %q)", target, p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == ".." || seg == "." {
				t.Fatalf("cleanPath let %q through with segment %q", target, seg)
			}
		}
	})
}

// FuzzPageToken: only tokens the server minted are valid.
func FuzzPageToken(f *testing.F) {
	p := newPageTokens()
	f.Add(p.mint())
	f.Add("abc.def")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		if p.valid(tok) && !validByConstruction(p, tok) {
			t.Fatalf("token %q accepted", tok)
		}
	})
}

// validByConstruction recomputes a token's MAC independently of valid.
func validByConstruction(p *pageTokens, tok string) bool {
	nonce, mac, ok := strings.Cut(tok, ".")
	return ok && nonce != "" && mac == p.mac(nonce)
}

// TestVendoredMermaid: the committed Mermaid build is the one
// scripts/vendor-mermaid.sh pins (`make mermaid` reproduces it).
func TestVendoredMermaid(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile("../../scripts/vendor-mermaid.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^SHA256=([0-9a-f]{64})$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/vendor-mermaid.sh records no SHA256=")
	}
	b, err := assets.ReadFile("assets/vendor/mermaid.min.js")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != string(m[1]) {
		t.Errorf("assets/vendor/mermaid.min.js has sha256 %s; scripts/vendor-mermaid.sh pins %s: run `make mermaid`", got, m[1])
	}
}
