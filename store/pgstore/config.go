package pgstore

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Defaults for Config.
const (
	// DefaultSchema is the PostgreSQL schema holding Obversa's tables.
	DefaultSchema = "obversa"
	// DefaultLeaseTTL is how long a lease lasts without renewal: after it
	// another host may take the run over.
	DefaultLeaseTTL = 30 * time.Second
	// DefaultRenewEvery is how often an owner renews its lease: a third of
	// the TTL, so that two renewals can fail before the lease expires.
	DefaultRenewEvery = 10 * time.Second
)

// The storage URL's own query parameters, taken out before the rest
// reaches the driver: the schema, and the lease TTL (a Go duration, say
// "10s"; renewals then come every third of it).
const (
	schemaParam   = "schema"
	leaseTTLParam = "lease_ttl"
)

// Config says where and how the record is kept in PostgreSQL.
type Config struct {
	// URL is the connection URL, postgres:// or postgresql://, without a
	// password (see ParseURL). Its own parameters (sslmode, passfile,
	// pool_max_conns, …) go to the driver.
	URL string
	// Schema holds the tables; "" means DefaultSchema. A lower-case SQL
	// identifier: [a-z_][a-z0-9_]{0,62}.
	Schema string
	// LocalDir is the local directory under which each run gets the
	// directory Record.Dir returns (logs and other files kept beside the
	// record, not in it): <LocalDir>/<namespace>/runs/<run-id>/. It is
	// created when a run is opened for writing. Required.
	LocalDir string
	// LeaseTTL is how long a lease lasts without renewal; 0 means
	// DefaultLeaseTTL. At least one second.
	LeaseTTL time.Duration
	// RenewEvery is how often an owner renews its lease; 0 means
	// DefaultRenewEvery (or a third of LeaseTTL when that is shorter). It
	// must be shorter than LeaseTTL.
	RenewEvery time.Duration
}

// ErrConfig marks a storage configuration that cannot work; the message
// names the setting and how to fix it.
var ErrConfig = errors.New("pgstore: invalid storage configuration")

var schemaRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`) })

// ParseURL reads a storage URL into a Config (LocalDir left empty). The
// URL is postgres://[user@]host[:port]/database[?params]; a "schema"
// parameter names the schema (default "obversa"), a "lease_ttl" parameter
// the lease TTL (a Go duration of at least one second, default
// DefaultLeaseTTL: how long a dead owner's host keeps its runs from other
// hosts). A password is refused,
// in the URL's user part or as a password parameter: a URL is echoed in
// process lists and kept in run files, so credentials come from a password
// file instead — the URL's passfile parameter, else $PGPASSFILE, else
// ~/.pgpass (libpq's rules). A passfile the URL or PGPASSFILE names must
// exist and be readable by its owner only. Errors wrap ErrConfig and never
// repeat a password.
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("%w: the storage URL %s is not a URL", ErrConfig, Redact(raw))
	}
	// "postgres:" alone parses too, with everything after it as a path or
	// a fragment; only the "//" form names a server and a database.
	if (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Opaque != "" ||
		!strings.HasPrefix(raw[len(u.Scheme)+1:], "//") {
		return Config{}, fmt.Errorf("%w: the storage URL %s must start with postgres:// or postgresql://", ErrConfig, Redact(raw))
	}
	if u.Fragment != "" || strings.HasSuffix(raw, "#") {
		return Config{}, fmt.Errorf("%w: the storage URL %s has a #fragment, which a PostgreSQL URL does not have; remove it",
			ErrConfig, Redact(raw))
	}
	if _, has := u.User.Password(); has {
		return Config{}, fmt.Errorf("%w: the storage URL %s holds a password; put it in a password file "+
			"(libpq format, mode 0600) named by the URL's passfile parameter or PGPASSFILE — "+
			"a URL shows in process lists and is kept in run files", ErrConfig, Redact(raw))
	}
	q := u.Query()
	if q.Has("password") {
		return Config{}, fmt.Errorf("%w: the storage URL %s has a password parameter; put the password in a password file "+
			"(libpq format, mode 0600) named by passfile or PGPASSFILE", ErrConfig, Redact(raw))
	}
	c := Config{Schema: q.Get(schemaParam)}
	if v := q.Get(leaseTTLParam); v != "" {
		ttl, err := time.ParseDuration(v)
		if err != nil || ttl < time.Second {
			return Config{}, fmt.Errorf("%w: the storage URL's lease_ttl %q is not a duration of at least one second (say lease_ttl=30s)", ErrConfig, v)
		}
		c.LeaseTTL = ttl
	}
	q.Del(schemaParam)
	q.Del(leaseTTLParam)
	u.RawQuery = q.Encode()
	c.URL = u.String()
	if rest := c.URL[len(u.Scheme)+1:]; !strings.HasPrefix(rest, "//") {
		// url.URL drops the "//" of a URL with no host, user or path
		// ("postgres://" renders "postgres:"), which pgx and this
		// function would then refuse.
		c.URL = u.Scheme + "://" + rest
	}
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	pf, named := q.Get("passfile"), "the URL's passfile parameter"
	if pf == "" {
		pf, named = os.Getenv("PGPASSFILE"), "PGPASSFILE"
	}
	if pf != "" {
		if err := checkPassfile(pf); err != nil {
			return Config{}, fmt.Errorf("%w: password file %s (from %s): %v", ErrConfig, pf, named, err)
		}
	}
	return c, c.check()
}

// checkPassfile applies libpq's rule: the file must be a regular file that
// only its owner can read or write (libpq skips any other, which leaves a
// login failure that does not say why).
func checkPassfile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file")
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("can be read or written by group or others (mode %04o); chmod 600 it", fi.Mode().Perm())
	}
	return nil
}

// check validates c and fills defaults.
func (c *Config) check() error {
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if !schemaRE().MatchString(c.Schema) {
		return fmt.Errorf("%w: schema %q must be a lower-case SQL identifier ([a-z_][a-z0-9_]{0,62})", ErrConfig, c.Schema)
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.LeaseTTL < time.Second {
		return fmt.Errorf("%w: lease TTL %s is shorter than one second", ErrConfig, c.LeaseTTL)
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = min(DefaultRenewEvery, c.LeaseTTL/3)
	}
	if c.RenewEvery <= 0 || c.RenewEvery >= c.LeaseTTL {
		return fmt.Errorf("%w: lease renewal interval %s must be positive and shorter than the lease TTL %s", ErrConfig, c.RenewEvery, c.LeaseTTL)
	}
	return nil
}

// Redact returns a storage URL fit to show: any password replaced by
// "xxxxx" (in the user part and in a password parameter). Text that is not
// a URL is replaced whole, since it cannot be told what it holds.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(storage URL withheld: not a URL)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// String describes the configuration without credentials.
func (c Config) String() string {
	return fmt.Sprintf("%s (schema %s)", Redact(c.URL), c.Schema)
}

// label names a run in errors and faults: the redacted URL, schema,
// namespace and run id.
func (c Config) label(namespace, id string) string {
	u, err := url.Parse(c.URL)
	host := "postgres"
	if err == nil {
		host = "postgres://" + u.Host + u.Path
	}
	return strings.Join([]string{host, c.Schema, namespace, id}, "/")
}
