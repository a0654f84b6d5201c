package pgstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/store"
)

// PutArtifact stores data as a content-addressed artifact of the run and
// returns its reference, under the rules of store.Sealer.PrepareArtifact
// (known secrets redacted in text, refused elsewhere; max_artifact_bytes).
// Like Append it needs the run's lease, checked in the same transaction
// that adds the blob's size to the run's total of distinct artifact bytes
// (max_total_artifact_bytes_per_run). Storing bytes already stored writes
// nothing; a stored copy that no longer hashes to its digest is replaced.
// Errors: store.ErrNotOwner (*FencedError when stale),
// store.ErrInvalidArtifact, store.ErrKnownSecret,
// store.ErrStorageLimitExceeded, database errors.
func (r *Run) PutArtifact(ctx context.Context, data []byte, mediaType, purpose string) (store.ArtifactRef, error) {
	own, err := r.owner()
	if err != nil {
		return store.ArtifactRef{}, err
	}
	ref, data, err := r.sealer.PrepareArtifact(data, mediaType, purpose)
	if err != nil {
		return store.ArtifactRef{}, err
	}
	if data == nil {
		data = []byte{} // an empty artifact, not SQL NULL
	}
	err = pgx.BeginFunc(ctx, r.b.pool, func(tx pgx.Tx) error {
		// The blob goes in first, without the run's row locked: appends
		// wait for the row only while the total is updated and committed.
		tag, err := tx.Exec(ctx, `INSERT INTO artifacts (namespace, run_id, digest, size, data) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT DO NOTHING`, r.b.ns, r.id, ref.Digest, ref.Size, data)
		if err != nil {
			return err
		}
		delta := ref.Size
		if tag.RowsAffected() == 0 {
			if delta, err = r.repairArtifact(ctx, tx, ref, data); err != nil {
				return err
			}
		}
		var h head
		if err := scanHead(tx.QueryRow(ctx, `SELECT artifact_bytes, '', `+leaseCols+` FROM runs
			WHERE namespace = $1 AND run_id = $2 FOR UPDATE`, r.b.ns, r.id), &h); err != nil {
			return r.b.rowErr(r.id, err)
		}
		if _, err := own.check(h.lease); err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			if err := r.sealer.CheckRunTotal(h.rev, ref); err != nil {
				return err
			}
		}
		if delta != 0 {
			_, err = tx.Exec(ctx, `UPDATE runs SET artifact_bytes = artifact_bytes + $3 WHERE namespace = $1 AND run_id = $2`, r.b.ns, r.id, delta)
		}
		return err
	})
	if err != nil {
		return store.ArtifactRef{}, r.wrap("store artifact", err)
	}
	return ref, nil
}

// repairArtifact handles a digest the run already stores: intact, it
// changes nothing (delta 0); damaged, its bytes are replaced and delta is
// the change in size.
func (r *Run) repairArtifact(ctx context.Context, tx pgx.Tx, ref store.ArtifactRef, data []byte) (int64, error) {
	var size int64
	var sum []byte
	if err := tx.QueryRow(ctx, `SELECT size, sha256(data) FROM artifacts WHERE namespace = $1 AND run_id = $2 AND digest = $3`,
		r.b.ns, r.id, ref.Digest).Scan(&size, &sum); err != nil {
		return 0, err
	}
	if size == ref.Size && "sha256:"+hex.EncodeToString(sum) == ref.Digest {
		return 0, nil
	}
	_, err := tx.Exec(ctx, `UPDATE artifacts SET size = $4, data = $5 WHERE namespace = $1 AND run_id = $2 AND digest = $3`,
		r.b.ns, r.id, ref.Digest, ref.Size, data)
	return ref.Size - size, err
}

// wrap passes the record's own errors on as they are and names the run in
// database errors.
func (r *Run) wrap(op string, err error) error {
	for _, e := range []error{store.ErrNotOwner, store.ErrRunNotFound, store.ErrStorageLimitExceeded, store.ErrKnownSecret,
		store.ErrInvalidArtifact, store.ErrInvalidEvent, store.ErrRevisionConflict, store.ErrCorruptEventStream,
		store.ErrArtifactIntegrity, store.ErrArtifactNotFound} {
		if errors.Is(err, e) {
			return err
		}
	}
	return dbErr(op+" in", r.label, err)
}

// ReadArtifact returns the bytes ref names after re-hashing them. Errors:
// store.ErrArtifactIntegrity (malformed reference, size or digest
// mismatch), store.ErrArtifactNotFound, store.ErrClosed, database errors.
func (r *Run) ReadArtifact(ctx context.Context, ref store.ArtifactRef) ([]byte, error) {
	if err := r.usable(); err != nil {
		return nil, err
	}
	hexSum, err := store.CheckRef(ref)
	if err != nil {
		return nil, err
	}
	rc, err := r.b.openBlob(r.id)(ctx, ref.Digest)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s in %s", store.ErrArtifactNotFound, ref.Digest, r.label)
	}
	if err != nil {
		return nil, r.wrap("read artifact", err)
	}
	data, _ := io.ReadAll(rc)
	if int64(len(data)) != ref.Size {
		return nil, fmt.Errorf("%w: %s: stored size %d differs from the reference's %d bytes", store.ErrArtifactIntegrity, ref.Digest, len(data), ref.Size)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexSum {
		return nil, fmt.Errorf("%w: %s: stored bytes do not hash to the digest", store.ErrArtifactIntegrity, ref.Digest)
	}
	return data, nil
}

// openBlob reads artifacts of run id from the artifacts table (a
// store.BlobOpener): fs.ErrNotExist when there is none.
func (b *Backend) openBlob(id string) store.BlobOpener {
	return func(ctx context.Context, digest string) (io.ReadCloser, error) {
		var data []byte
		err := b.pool.QueryRow(ctx, `SELECT data FROM artifacts WHERE namespace = $1 AND run_id = $2 AND digest = $3`,
			b.ns, id, digest).Scan(&data)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fs.ErrNotExist
		}
		if err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
}
