package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// ErrForbidden is returned (and answered with 403) for a POST without a
// valid page token or from another origin, for a steering request on a
// read-only server, and for a request whose Host names neither the
// loopback interface nor the address the server listens on.
var ErrForbidden = errors.New("forbidden")

// CSP is the Content-Security-Policy of every response: scripts and
// styles only from the server itself (no inline script, no eval), data
// only from it, no frames, no plugins. Mermaid writes a <style> element
// into each drawing, so inline styles are allowed; inline scripts never
// are (docs/decisions.md, "The web run browser").
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Header and cookie names of the two tokens.
const (
	// PageTokenHeader carries the per-page token a POST must have: the
	// page's <meta name="obversa-page-token">, minted per page load.
	PageTokenHeader = "X-Obversa-Page-Token"
	// AccessCookie holds the access token (--token) once a browser
	// presented it as ?token=; scripts cannot read it.
	AccessCookie = "obversa_token"
)

// securityHeaders sets the headers every response carries.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// cleanPath reports whether a request path is one the server may route:
// absolute, already clean, and without a ".." segment, however it was
// encoded (net/http has decoded %2e and %2f into Path by now). Anything
// else is 404 before it reaches a handler.
func cleanPath(u *url.URL) bool {
	p := u.Path
	if p == "" || p[0] != '/' || path.Clean(p) != p {
		return false
	}
	if strings.ContainsAny(p, "\\\x00") {
		return false
	}
	return !strings.Contains(strings.ToLower(u.RawPath), "%2f")
}

// pageTokens mints and checks per-page tokens: a random nonce and its
// HMAC under a key that lives as long as the server, so any page the
// server rendered can POST and nothing else can.
type pageTokens struct{ key []byte }

func newPageTokens() *pageTokens {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24+)
	return &pageTokens{key: k}
}

func (p *pageTokens) mac(nonce string) string {
	m := hmac.New(sha256.New, p.key)
	m.Write([]byte(nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// mint returns a new page token.
func (p *pageTokens) mint() string {
	n := make([]byte, 16)
	_, _ = rand.Read(n)
	nonce := base64.RawURLEncoding.EncodeToString(n)
	return nonce + "." + p.mac(nonce)
}

// valid reports whether tok is a token mint returned.
func (p *pageTokens) valid(tok string) bool {
	nonce, mac, ok := strings.Cut(tok, ".")
	return ok && nonce != "" && hmac.Equal([]byte(mac), []byte(p.mac(nonce)))
}

// sameOrigin reports whether a state-changing request comes from a page
// of this server (docs/ui.md): its Origin (sent by every browser with a
// POST from script) must name the request's own host; without an Origin,
// Sec-Fetch-Site must say same-origin. A request with neither is refused:
// it did not come from a page of this server.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host == r.Host
	}
	return r.Header.Get("Sec-Fetch-Site") == "same-origin"
}

// accessToken reports whether r carries the access token: as a bearer
// token, the access cookie, or a ?token= query parameter.
func accessToken(r *http.Request, token string) (ok, fromQuery bool) {
	eq := func(s string) bool { return s != "" && subtle.ConstantTimeCompare([]byte(s), []byte(token)) == 1 }
	// The scheme's name is case-insensitive (RFC 9110, section 11.1).
	if scheme, b, found := strings.Cut(r.Header.Get("Authorization"), " "); found && strings.EqualFold(scheme, "Bearer") && eq(b) {
		return true, false
	}
	if c, err := r.Cookie(AccessCookie); err == nil && eq(c.Value) {
		return true, false
	}
	if eq(r.URL.Query().Get("token")) {
		return true, true
	}
	return false, false
}

// IsLoopback reports whether a listen address (host:port) binds only the
// loopback interface: 127.0.0.0/8, ::1 or "localhost". An empty host
// (all interfaces) is not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a Host header names the loopback
// interface; a server without an access token answers only those, so a
// web page elsewhere cannot reach it through a rebound DNS name.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
