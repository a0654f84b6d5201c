package pgstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "pgpass")
	must(t, os.WriteFile(good, []byte("*:*:*:u:pw\n"), 0o600))
	open := filepath.Join(dir, "open")
	must(t, os.WriteFile(open, []byte("*:*:*:u:pw\n"), 0o644))
	t.Setenv("PGPASSFILE", "")
	for _, tt := range []struct {
		url, schema, wantURL, err string
		ttl                       time.Duration // 0: DefaultLeaseTTL
	}{
		{url: "postgres://u@h/d?lease_ttl=6s&sslmode=disable", schema: "obversa", wantURL: "postgres://u@h/d?sslmode=disable", ttl: 6 * time.Second},
		{url: "postgres://u@h/d?lease_ttl=500ms", err: "lease_ttl \"500ms\" is not a duration of at least one second"},
		{url: "postgres://u@h/d?lease_ttl=soon", err: "lease_ttl \"soon\""},
		{url: "postgres://u@db.example:5432/obv", schema: "obversa", wantURL: "postgres://u@db.example:5432/obv"},
		{url: "postgresql://u@h/d?schema=team_a&sslmode=require", schema: "team_a", wantURL: "postgresql://u@h/d?sslmode=require"},
		{url: "postgres://u@h/d?passfile=" + good, schema: "obversa", wantURL: "postgres://u@h/d?passfile=" + strings.ReplaceAll(good, "/", "%2F")},
		{url: "postgres://u:s3cret@h/d", err: "holds a password"},
		{url: "postgres://u@h/d?password=s3cret", err: "password parameter"},
		{url: "mysql://u@h/d", err: "must start with postgres://"},
		{url: "postgres:#0:pw@", err: "must start with postgres://"},
		{url: "postgres://?sslmode=disable", schema: "obversa", wantURL: "postgres://?sslmode=disable"},
		{url: "postgres:/d", err: "must start with postgres://"},
		{url: "postgres://u@h/d#x", err: "has a #fragment"},
		{url: "postgres://u@h/d?schema=Bad-Name", err: "lower-case SQL identifier"},
		{url: "postgres://u@h/d?passfile=" + open, err: "group or others (mode 0644)"},
		{url: "postgres://u@h/d?passfile=" + filepath.Join(dir, "none"), err: "no such file"},
		{url: "postgres://u@h/d\x7f", err: "is not a URL"},
	} {
		c, err := ParseURL(tt.url)
		if tt.err != "" {
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseURL(%q) error %v, want one saying %q", tt.url, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("ParseURL(%q) error repeats the password: %v", tt.url, err)
			}
			continue
		}
		ttl, every := DefaultLeaseTTL, DefaultRenewEvery
		if tt.ttl != 0 {
			ttl, every = tt.ttl, tt.ttl/3
		}
		if err != nil || c.URL != tt.wantURL || c.Schema != tt.schema || c.LeaseTTL != ttl || c.RenewEvery != every {
			t.Errorf("ParseURL(%q) = %+v, %v; want URL %q schema %q", tt.url, c, err, tt.wantURL, tt.schema)
		}
	}
	t.Setenv("PGPASSFILE", open)
	if _, err := ParseURL("postgres://u@h/d"); err == nil || !strings.Contains(err.Error(), "from PGPASSFILE") {
		t.Errorf("an open PGPASSFILE: %v", err)
	}
}

func TestConfigCheck(t *testing.T) {
	for _, tt := range []struct {
		ttl, every time.Duration
		ok         bool
	}{
		{0, 0, true},
		{3 * time.Second, 0, true},
		{500 * time.Millisecond, 0, false},
		{10 * time.Second, 10 * time.Second, false},
		{10 * time.Second, -time.Second, false},
	} {
		c := Config{LeaseTTL: tt.ttl, RenewEvery: tt.every}
		if err := c.check(); (err == nil) != tt.ok {
			t.Errorf("TTL %s renew %s: %v", tt.ttl, tt.every, err)
		}
		if tt.ok && (c.RenewEvery >= c.LeaseTTL || c.RenewEvery <= 0) {
			t.Errorf("TTL %s: renewal every %s", c.LeaseTTL, c.RenewEvery)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h/d":          "postgres://u:xxxxx@h/d",
		"postgres://u@h/d?password=pw": "postgres://u@h/d?password=xxxxx",
		"postgres://u@h/d":             "postgres://u@h/d",
		"::not a url":                  "(storage URL withheld: not a URL)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseURL: ParseURL never panics, never puts a password it was given
// into its result or its error, and what it accepts has no password and a
// valid schema.
func FuzzParseURL(f *testing.F) {
	f.Add("postgres://u@h:5432/d?schema=s&sslmode=disable")
	f.Add("postgres://u:pw@h/d")
	f.Add("postgresql://h/d?password=pw&schema=x")
	f.Add("postgres://%zz")
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := ParseURL(raw)
		const secret = "pw"
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		if strings.Contains(c.URL, "password=") || strings.Contains(Redact(raw), ":"+secret+"@") {
			t.Fatalf("accepted %q with a password: %+v", raw, c)
		}
		if !schemaRE().MatchString(c.Schema) {
			t.Fatalf("accepted schema %q", c.Schema)
		}
		if _, again := ParseURL(c.URL); again != nil && !strings.Contains(again.Error(), "passfile") {
			t.Fatalf("ParseURL(%q) accepted, its URL %q refused: %v", raw, c.URL, again)
		}
	})
}
