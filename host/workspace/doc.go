// Package workspace snapshots the directory a run works in and guards it
// with a lease (docs/architecture.md#the-watchdog).
//
// The watchdog takes a Snapshot before it starts a worker, after a worker
// dies and when a run pauses (the runner-pause-anchor); before it starts a
// replacement worker or resumes a paused run it calls Verify, and a
// workspace that changed in between is WORKSPACE_DRIFT: the run pauses
// rather than continue on files nobody recorded.
//
// # Providers
//
//   - "files": every regular file and symlink under the root. Symlinks are
//     recorded, never followed (a symlinked directory is one entry). Every
//     directory named .obversa or .git, everything named .git, and the
//     directories in Options.Exclude (e.g. the storage directory) are
//     skipped. FIFOs, sockets and devices are ignored.
//   - "git": the files git would show in the working tree — tracked files
//     that exist plus untracked files that are not ignored — listed with
//     `git ls-files -z --cached --others --exclude-standard` and hashed
//     here. The index, the stash and the refs are never written (the
//     environment carries GIT_OPTIONAL_LOCKS=0, so git does not refresh the
//     index either). Head records `git rev-parse HEAD`, empty in a
//     repository without commits. Tracked files that are deleted are absent
//     from the manifest; submodules and nested repositories are not
//     descended; a path below a directory that has become a symlink is
//     absent, as git sees it. The same .obversa/.git/Exclude rules apply.
//   - "none": an empty snapshot that always verifies.
//
// Every name in a snapshot must be valid UTF-8 (the anchor is JSON); a
// workspace holding another name cannot be snapshotted (ErrProvider).
// Contents are streamed through SHA-256, never read whole, by a few
// goroutines in parallel.
//
// # Manifest and digest
//
// The manifest has one Entry per file, sorted by path (byte order). Mode is
// the Unix st_mode: 0o100000 plus the permission bits (including setuid,
// setgid and sticky) for a regular file, exactly 0o120000 for a symlink.
// Size is the content length in bytes (for a symlink, the length of its
// target), SHA256 the lowercase hex digest of the content (for a symlink,
// of its target string).
//
// Digest is "sha256:" and the lowercase hex SHA-256 of the canonical
// manifest: the line "obversa-workspace-manifest-v1\n" followed, for each
// entry in order, by its path, a NUL byte, the mode in octal, a space, the
// size in decimal, a space, the content hash and "\n". Paths cannot contain
// NUL, so the encoding is unambiguous. Head is not part of the digest;
// Compare reports a moved head as its own change.
//
// # Anchors
//
// Encode and Decode carry a snapshot as JSON. Decode is strict: unknown,
// duplicate or differently-cased field names, missing fields, trailing data,
// unsorted or repeated paths, malformed hashes and a digest that does not
// match the manifest are all ErrInvalidSnapshot (WORKSPACE_ANCHOR_INVALID).
//
// # Lease
//
// AcquireLease takes flock(2) on <root>/.obversa/workspace.lease without
// waiting, and records the holder (a run id) in the file so that a refused
// caller can name it. The kernel frees the lock when the holder's
// descriptor closes — on Release or when the process dies — so a lease is
// never stale. The file is left in place on Release: removing a locked file
// would let two processes lock different inodes of the same name.
package workspace
