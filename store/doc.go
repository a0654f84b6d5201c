// Package store is Obversa's durable record: per-run event streams,
// content-addressed artifacts and the run's ownership. It is the single
// source of truth a stopped run carries on from, so it never loses an
// acknowledged event, never shows part of a batch, and detects any edit.
//
// Backend, Record and Ownership are the contract every storage backend
// meets (package storetest holds the conformance suite); this package's
// Store is the file backend, described below. It imports only the standard
// library, golang.org/x/sys, github.com/gowebpki/jcs (RFC 8785) and
// github.com/google/uuid. All its file access goes through FS (the
// operating system's by default; package simfs simulates faults and power
// loss).
//
// # Layout
//
//	<root>/<namespace>/runs/<run-id>/
//	    events.jsonl                 the event stream
//	    events.jsonl.idx             validated-prefix cache (optional, rebuildable)
//	    fold.snapshot                the fold saved at a revision (host/runstate; optional, a cache)
//	    events.jsonl.torn-<ts>       torn tails cut off by recovery, kept for inspection
//	    artifacts/sha256/<hex>       artifact blobs, named by the SHA-256 of their bytes
//	    artifacts/tmp/               temporary files of artifact writers
//	    lock                         run lock (flock) and its holder record (JSON)
//
// Run ids and namespaces match [A-Za-z0-9][A-Za-z0-9._-]{0,127}.
//
// # Event lines
//
// events.jsonl holds one event per line (LF-terminated) and is only ever
// appended to; recovery may cut a torn tail, nothing else changes it (a
// live writer's file ends in a zero tail; see The zero tail). A line
// is the RFC 8785 canonical JSON of the envelope without its digest, with a
// last member "digest" added:
//
//	{"batch_end":3,"data":{"node":"draft"},"id":"…","prev":"sha256:…","rev":2,"ts":"2026-01-02T15:04:05.000Z","type":"graph:node-completed","digest":"sha256:…"}
//
// The members:
//
//   - rev: 1-based, contiguous, equal to the line number.
//   - id: unique in the stream; 1..256 bytes of printable ASCII other than
//     '"' and '\' (a random UUID when the caller gives none).
//   - type: [A-Za-z0-9][A-Za-z0-9._:/-]{0,127}.
//   - ts: commit time, RFC 3339 with milliseconds, UTC (the same for every
//     event of a batch).
//   - data: the caller's JSON in RFC 8785 canonical form, produced by the
//     JCS library (JSON that is canonical already, or canonical but for
//     member order — a marshalled Go struct — takes a fast path whose output
//     a differential fuzz test holds to the library's). Numbers must keep
//     their value through canonicalisation (I-JSON, RFC 7493): an integer
//     beyond ±2^53 is refused, not rounded, so that canonicalisation never
//     loses information and the stored bytes are exactly what was hashed.
//   - prev: the digest of rev-1; "" for rev 1.
//   - batch_end: the rev of the last event written by the same Append call.
//     A batch is complete when its line with rev == batch_end is present.
//   - digest: "sha256:" + hex SHA-256 of the canonical envelope without
//     digest, i.e. of the line's bytes up to the member "digest" with the
//     closing '}' put back.
//
// Because each line is canonical, the writer hashes exactly the bytes it
// writes, and a reader checks a line by parsing the fixed envelope layout,
// checking that data is in canonical form (a one-pass check that a
// differential fuzz test holds to the JCS library's answer) and hashing the
// line's bytes. Decoding is strict: any
// other member, order, whitespace or value form is damage; so are a gap or
// repeat in rev, a broken prev link, a duplicate id, and a batch whose lines
// disagree on batch_end.
//
// # The zero tail
//
// A writer keeps a zero-filled region past the last line and writes each
// batch over it, so that the batch's fdatasync changes no file size (on
// ext4 an overwrite of written blocks skips the journal commit an append
// needs; docs/decisions.md, "A zero-filled record tail"). When the region
// has less room than the next batch, the writer first writes 1 MiB of
// NULs past the batch (tailChunk), made durable by the batch's fdatasync.
// A fill that fails (ENOSPC, EIO) is given up: the batch is a plain
// append, and no fill is tried again until the record has grown by
// another MiB. Nor is a fill made on a file system with less than 64 MiB
// free (fstatfs), where a full device must stop the run at the event
// that does not fit. The lines end at the first NUL byte: the logical end of
// the stream, which every reader uses instead of the file's size (no event
// line holds a NUL; canonical JSON escapes it). Another handle notices
// appends by reading the byte at its committed end, not by stat(2); that
// read also tells a writer whether the file ends at its committed end, and
// otherwise it knows the size from its own fills and writes, so a batch
// costs no fstat (docs/decisions.md, "An append asks the file system for
// no size"). The last writable handle to close cleanly truncates the file
// to its last line and fdatasyncs it, so a finished run's events.jsonl is
// plain JSON Lines; a live or crashed run's file may end in NULs. Each
// writable handle holds a shared writer mark while open (File.WriterLock:
// an open-file-description byte-range lock past any data), and a closing
// one trims only when it can take the mark exclusive, so no close cuts off
// the tail another process's writer is writing over (docs/decisions.md,
// "A closing writer trims only as the last one").
//
// A torn overwrite can leave the sectors of its batch that reached the
// disk between ones that did not (still NUL). So after the last complete
// batch, bytes past a NUL are a torn write when every run of NULs followed
// by other bytes ends on a 512-byte boundary and every whole line among
// them that decodes is a later line of the one torn batch (same batch_end,
// a rev not yet reached); the torn bytes up to the last byte that is not
// NUL are moved aside as below. Anything else past a NUL is damage. An
// open and Verify read the whole zero tail to tell; a handle picking up
// another's appends stops at the first NUL.
//
// # Appends and the fsync policy
//
// A run's record has one writer at a time (see Run lock and ownership), and
// the writer batches above the store: one Append call is one batch. Append
// is conditional on expectedRev, the revision the caller's decision was
// read from, and all-or-nothing. It checks and canonicalises its events
// first, then takes the stream's one mutex and the exclusive flock on
// events.jsonl, re-reads (and validates) whatever another handle or process
// appended, checks expectedRev (a stale one fails with REVISION_CONFLICT
// and writes nothing), encodes the batch, writes it with one pwrite(2) at the
// committed end (over the zero tail) and calls fdatasync(2) once. No Append returns success before that
// fdatasync has returned. A file is created only with an fsync of its
// directory (events.jsonl, a torn-tail file, artifact links); directories
// the package creates are fsynced into their parents.
//
// If the write fails, what it wrote is truncated away and fdatasync'd (so
// that no crash brings it back) and Append returns a *StorageError naming
// the path — STORAGE_FULL when the device or quota was full, RUN_STORAGE
// otherwise; the handle stays usable, so once space is freed the same run
// is appended to again. If fdatasync fails, or undoing the write fails,
// the handle is poisoned: the batch's outcome is unknown, and every later
// write through the handle returns ErrStoreFailed, never retried into a
// false success (after a failed fsync the kernel may drop the dirty pages
// and report later fsyncs as successful). Reopening the run tells what is
// on disk.
//
// Event ids are unique in the stream: a caller may name an event (a
// preflight pause is resumed by its id); reusing an id fails with
// INVALID_EVENT.
//
// # Recovery on open
//
// Opening a run validates events.jsonl. The bytes after the last complete
// batch are a torn write when they are: an unterminated last line, a last
// line that is not JSON, or complete lines of one batch that has fewer lines
// than its batch_end declares — or, past a NUL, what a torn overwrite of
// the zero tail leaves (see The zero tail). A torn tail is copied to
// events.jsonl.torn-<ts> (fsynced, directory fsynced), then events.jsonl is
// truncated to the batch boundary and fdatasync'd. Anything else wrong — a
// line that is damaged but not last, a last line that is JSON but fails its
// checks (an edit, not a tear), damage in an earlier batch — fails the open
// with CORRUPT_EVENT_STREAM naming the line and revision, and nothing on
// disk is changed. Recovery runs under the exclusive flock, so it never
// races a live writer; a first validation pass runs without the lock and
// only a torn or damaged result is re-examined under it.
//
// Evidence that bytes were committed beats the torn-tail rule. The
// validated-prefix cache is written only after the bytes it covers were
// fdatasync'd, so whatever size a readable cache records was committed
// (even when the cache no longer matches the stream): a tail that looks
// torn but starts before that size, or a stream that ends before it, is
// CORRUPT_EVENT_STREAM naming the line, never cut, and the cache is left
// as it is. A damaged line followed by more lines is never the last line,
// so it is corruption too.
//
// # Validated-prefix cache
//
// events.jsonl.idx records the end of a validated prefix (size, rev, digest
// of its last event, CRC-32C of its bytes, an offset index and the FNV-1a
// hashes of its ids, so duplicate ids are still refused; see cache.go for the
// binary layout). An open with a usable cache reads the prefix once to
// compare the CRC (memory bandwidth, no JSON work), fully validates the
// prefix's last line, and fully validates only the lines after it. The
// id index is built from the cached hashes when it is first needed: at
// once by a writable open, and by a read-only one (status, events) only
// when it validates a line past the cache, so reading a finished run
// builds none. A
// missing cache falls back to a full validation; so does a mismatching
// one, whose full validation then names the damaged line. The cache can
// make an open faster, never make a damaged file pass. It is rewritten
// whole (temporary file, fsync, rename; the directory is not fsynced) when
// an open validated 256 or more new events, every 4096 events a writer
// appends, and when a handle that appended closes, so no crash leaves a
// damaged one. Because it is the evidence of what was committed, a cache
// that exists but does not decode, or that a stream passing the full
// validation does not match, fails every open (read-only ones too) with an
// *IndexError (CORRUPT_EVENT_STREAM) naming the file and saying how to
// recover; nothing is cut. Verify reports it as a Fault with File set.
//
// # Reading
//
// Read and Follow stream events from any revision without loading the
// stream: an index of every 64th line's offset finds the start, and each
// line's digest and chain link are checked again as it is read. Only
// complete batches are shown. A read first picks up what other handles or
// processes appended (waiting for a write in progress through the same
// handle), then reads from a published snapshot of the committed end.
// Follow wakes at once for appends through the same handle and polls
// (50 ms) for other processes'. Verify re-checks a
// whole run, including every artifact referenced from event data, without
// changing anything. A read-only open (status, events, verify) creates
// nothing, never cuts a torn tail and writes no cache; its writes fail
// with ErrReadOnly.
//
// # Artifacts
//
// PutArtifact stores bytes at artifacts/sha256/<hex>: written to a
// temporary file, fdatasync'd, hard-linked to its final name, directory
// fsynced. Writers in different processes are serialised by a flock on the
// blob directory, under which the per-run total is checked. References
// ({digest, size, media_type, purpose}) are re-hashed on every read
// (ARTIFACT_INTEGRITY; ARTIFACT_NOT_FOUND for a missing blob).
//
// # Policy and secrets
//
// Policy limits event data bytes, batch bytes, artifact bytes and the run's
// total of distinct artifact bytes (STORAGE_LIMIT_EXCEEDED). Known secrets
// are refused in events (type, id, data) and in JSON or binary artifacts
// (KNOWN_SECRET): raw, JSON-escaped, or split by an escape (data is checked
// after canonicalisation removes needless escapes, and JSON artifacts with
// escapes are decoded). Text artifacts have them replaced by "[REDACTED]"
// before hashing. Secret values are never written anywhere, error messages
// included; errors name the event and field path instead.
//
// # Run lock and ownership
//
// Only the run's owner writes its record: Append and PutArtifact through a
// handle that holds no ownership fail with NOT_OWNER. Run.Lock takes
// ownership: flock(LOCK_EX|LOCK_NB) on <rundir>/lock, recording the holder
// (pid, process start time, boot id, host) in the file. The lock belongs
// to the open file description, so a child handed the descriptor
// (Ownership.Handoff, OBVERSA_LOCK_FD) and adopting it (Run.Adopt) owns
// the run too; the kernel frees the lock when every descriptor is closed.
// The flock decides ownership; the record only names the holder. A record
// that cannot be parsed is a *HolderRecordError saying whether a process
// holds the flock (a non-blocking shared probe): if none does, it is
// stale, and the next Lock, holding the flock, rewrites it.
// Recovery of a torn tail at open needs no ownership: it runs under the
// exclusive flock on events.jsonl that every write holds.
package store
