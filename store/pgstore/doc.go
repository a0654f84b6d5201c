// Package pgstore keeps Obversa's record in PostgreSQL (through pgx): a
// store.Backend beside the file backend, for teams that want every run in
// one place and any host able to watch, resume or take over a run
// (docs/storage-postgres.md is the user's guide).
//
// # The same record
//
// A run's events are rows of the events table keyed by (namespace, run id,
// rev), holding the envelope the file backend writes to events.jsonl: id,
// type, ts, data (the RFC 8785 canonical text, exactly the bytes the
// digest covers — text, not jsonb), prev, digest and batch_end. Appends
// are checked, canonicalised and hashed by store.Sealer, the file
// backend's own rules, so a run read back from PostgreSQL and laid out
// with store.AppendLine is byte for byte the events.jsonl the file backend
// would hold: store.ParseLine re-checks every event read, and Verify hands
// the lines to store.VerifyLines, the checks `obversa verify` makes on a
// file. Artifacts are rows of the artifacts table by (run, digest), with
// the run's total of distinct artifact bytes kept on its row for the
// policy limit. The runs table holds each run's head (last rev and digest)
// and its lease.
//
// # Schema and migrations
//
// The tables live in one schema (Config.Schema, default "obversa"),
// created and migrated by the binary, never by hand: the SQL files in
// migrations/ are embedded, numbered 0001, 0002, …, and applied in order,
// each in its own transaction, recorded in schema_migrations with its
// checksum. Open applies what is missing under a session advisory lock,
// so processes starting at once apply each migration once; a schema newer
// than the binary, or an applied migration whose checksum differs, is
// refused (ErrSchema) and left alone.
//
// # Appends
//
// Each Append is one transaction: the run's row is locked (SELECT … FOR
// UPDATE, which serialises appends to the run across every host), the
// appender's lease is checked against it (epoch, lease id, held), then the
// expected revision and the batch's ids; the
// events are inserted, the head moved, followers notified (pg_notify) and
// the transaction committed. Two round trips: the first begins, locks and
// reads; the second inserts, updates, notifies and commits. Append
// returns once COMMIT has returned: durable, since its sessions set
// synchronous_commit=on (unless the URL sets it otherwise) and the server
// runs with fsync on, its default. A batch is one transaction, so there is no torn
// tail to recover: it is committed whole or not at all. If the connection
// fails while COMMIT is under way — or the client dies after sending it —
// the server may still commit it; the client cannot know, and reading the
// record tells (a repeated batch is not taken for a retry: its ids are
// refused, or its revision conflicts).
//
// # Ownership: leases with a fencing epoch
//
// Exactly one owner writes a run. Ownership is a lease on the run's row:
// holder (host — $OBVERSA_HOST or the host name —, pid, boot id, process
// start time), start, expiry, a lease id and an epoch. Lock grants the
// lease when none is held, when it has expired by the database's clock
// (the only clock all hosts share), or when its holder ran on this host
// and boot and its process is gone; it increments the epoch. Every write
// (Append, PutArtifact) checks, inside its transaction, that the run's
// lease is still the writer's (same epoch and lease id, held): a stale
// owner — partitioned, frozen, or simply slow — is refused with a
// *FencedError (store.ErrNotOwner) naming the current owner and epoch,
// whatever it believes, so it can never write after a takeover.
//
// The owner renews its lease every Config.RenewEvery (default 10 s) to
// Config.LeaseTTL (default 30 s) past the database's now; a renewal that
// finds the lease gone marks it lost (Lease.Lost). A watchdog hands its
// lease to its worker through the environment (Lease.Handoff, LeaseEnv:
// schema, namespace, run, epoch and lease id); the worker's Run.Adopt
// checks it against the row and renews it too, so the lease lives while
// either process does. Release of the lease taken by Lock ends it for
// both (the next Lock is granted at once, with a new epoch); an adopted
// lease's Release only stops that process's renewals.
//
// Run.ForceLock takes a held, unexpired lease for a person who has
// confirmed that its holder is gone: it names the epoch they confirmed,
// and fails with ErrLeaseChanged if the run has moved on since.
//
// # What a takeover promises
//
// A takeover fences the record: from the moment the new owner's Lock
// commits, nothing the old owner does reaches the run's events or
// artifacts. It promises nothing about the old owner's processes. Plugin
// processes, engine CLIs and their commands started on the old host are
// that host's to clean: if the host is dead they died with it; if it is
// alive but cut off (a partition, a frozen VM), they run on until that
// host's watchdog stops them (Lease.Lost tells it the lease is gone), and
// whatever they do
// outside the record — files in that host's workspace, calls to outside
// services, a git push — is not undone. An attempt that was running at
// the takeover has no settled outcome in the record, so the new owner
// treats it as interrupted (retried only where the node is retry-safe),
// just as after a crash on one machine.
//
// # Follow
//
// Follow reads what is there, then waits for notifications: the Backend
// keeps one connection LISTENing (github.com/jackc/pgxlisten), started by
// the first Follow, that wakes the followers of the run each notification
// names. While that connection is down, notifications can be missed, so
// followers poll once a second; when it is back, every follower reads
// again.
//
// # Configuration and credentials
//
// ParseURL reads a postgres:// URL (a schema parameter names the schema).
// A password in the URL is refused: credentials come from a password file,
// the URL's passfile parameter or PGPASSFILE (checked to exist and to be
// readable by its owner only), else ~/.pgpass; errors and Config.String
// never show a password. Record.Dir is a local directory
// (<LocalDir>/<namespace>/runs/<run-id>/) for the files kept beside the
// record, not in it: logs, the live output stream, workspace snapshots.
package pgstore
