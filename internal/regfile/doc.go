// Package regfile reads files a user names (run files, lock files,
// prompts, public keys, signatures) safely: only a regular file, opened
// without blocking, read up to a bound. A named pipe with no writer or a
// device such as /dev/zero would otherwise block the read or fill memory.
package regfile
