// Package regfile reads files a user names (run files, lock files,
// prompts, public keys, signatures) safely: only a regular file, opened
// without blocking, read up to a bound. OpenFile opens the files of a
// storage directory (the record, its lock and index, logs, the engines'
// stream) the same way: only a regular file, never waiting on a pipe. A named pipe with no writer or a
// device such as /dev/zero would otherwise block the read or fill memory.
package regfile
