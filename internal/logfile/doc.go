// Package logfile writes the logs a run keeps beside its record —
// plugins.log, worker.log — capped in size and with known secrets redacted
// before a byte reaches the disk (docs/architecture.md#the-record, docs/run-file.md
// storage.max_log_bytes).
//
// A Writer appends to one file. Secrets are redacted by store.Redactor, in
// whole lines; a line still being written is held back only as far as a
// secret could reach into it, so a secret split across two writes is still
// found. When the file would grow past its cap it is rotated: the current
// file becomes "<name>.1" (replacing an older one) and a new file starts,
// so at most twice the cap is on disk per log. A single line longer than
// the cap is cut to it and marked.
package logfile
