-- The record of runs: one row per run (its head and its lease), its events
-- in the envelope the file backend writes to events.jsonl, and its
-- artifacts by digest. Identifiers and ids sort bytewise (COLLATE "C"), as
-- the file backend's directory listing does.

CREATE TABLE runs (
    namespace         text COLLATE "C" NOT NULL,
    run_id            text COLLATE "C" NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    -- The head of the event stream: the last committed rev (0 when empty)
    -- and its digest ('' when empty). Appends check and move it under the
    -- row's lock.
    rev               bigint NOT NULL DEFAULT 0 CHECK (rev >= 0),
    last_digest       text NOT NULL DEFAULT '',
    -- Sum of the sizes of the run's distinct artifacts, bytes.
    artifact_bytes    bigint NOT NULL DEFAULT 0 CHECK (artifact_bytes >= 0),
    -- The lease. epoch grows by one with every new owner; appends carry
    -- the owner's epoch and lease_id and are refused unless both match and
    -- the lease is held. lease_id is NULL until the first Lock.
    epoch             bigint NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    lease_id          uuid,
    lease_held        boolean NOT NULL DEFAULT false,
    lease_expires_at  timestamptz,
    holder_host       text NOT NULL DEFAULT '',
    holder_pid        integer NOT NULL DEFAULT 0,
    holder_boot_id    text NOT NULL DEFAULT '',
    holder_start_time bigint NOT NULL DEFAULT 0,
    holder_started_at timestamptz,
    PRIMARY KEY (namespace, run_id)
);

CREATE TABLE events (
    namespace  text COLLATE "C" NOT NULL,
    run_id     text COLLATE "C" NOT NULL,
    rev        bigint NOT NULL CHECK (rev >= 1),
    id         text COLLATE "C" NOT NULL,
    type       text COLLATE "C" NOT NULL,
    ts         timestamptz NOT NULL,
    -- RFC 8785 canonical JSON, exactly the bytes the digest covers (text,
    -- not jsonb, which would reorder and reformat it).
    data       text NOT NULL,
    prev       text NOT NULL,
    digest     text NOT NULL,
    batch_end  bigint NOT NULL,
    -- The fencing epoch of the owner that appended the batch (not part of
    -- the envelope).
    epoch      bigint NOT NULL,
    PRIMARY KEY (namespace, run_id, rev),
    UNIQUE (namespace, run_id, id),
    FOREIGN KEY (namespace, run_id) REFERENCES runs
);

CREATE TABLE artifacts (
    namespace  text COLLATE "C" NOT NULL,
    run_id     text COLLATE "C" NOT NULL,
    digest     text COLLATE "C" NOT NULL,
    size       bigint NOT NULL CHECK (size >= 0),
    data       bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, run_id, digest),
    FOREIGN KEY (namespace, run_id) REFERENCES runs
);
