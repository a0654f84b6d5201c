package hcl

import (
	"net/url"
)

// checkStorageURL checks the shape of storage.url: a postgres:// or
// postgresql:// URL without a password, which would be kept in the run
// file and shown in process lists (docs/storage-postgres.md). It returns
// a diagnostic's summary and detail, or "" when the URL is acceptable;
// the database checks the rest when the run starts. A diagnostic never
// repeats a password.
func checkStorageURL(s string) (summary, detail string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Opaque != "" {
		return "storage.url is not a PostgreSQL URL",
			`The record is kept in PostgreSQL when url names a database: postgres://[user@]host[:port]/database[?params], for example url = "postgres://obversa@db.internal/obversa?sslmode=verify-full". Remove url to keep runs in storage.directory.`
	}
	if _, has := u.User.Password(); has || u.Query().Has("password") {
		return "storage.url holds a password",
			"A run file is kept in version control and a URL shows in process lists: put the password in a password file (libpq's format, mode 0600) named by the URL's passfile parameter or PGPASSFILE, and remove it from the URL."
	}
	return "", ""
}
