package store

import (
	"fmt"
	"io"
	"strings"
)

// The id index of a state decoded from the validated-prefix cache: the
// cache keeps each event's id hash, and the map from hash to revision that
// duplicate checks use is built from them when first needed (loadCache,
// ensureIDs).

// ensureIDs builds the id index of a state decoded from the cache before
// its first use, reading the stream ra where two ids share a hash. It
// returns an *IndexError when the cache records one id at two revs (as a
// writable open refuses it), a *StorageError when ra cannot be read. The
// caller holds the stream's mutex, as for every use of the state.
func (st *chainState) ensureIDs(ra io.ReaderAt) error {
	if st.ids != nil {
		return nil
	}
	mismatch, err := st.indexIDs(ra)
	switch {
	case err != nil:
		st.ids = nil
		return storageErr("read", strings.TrimSuffix(st.idsFrom, cacheSuffix), err)
	case mismatch != "":
		st.ids = nil
		return &IndexError{Path: st.idsFrom, Problem: mismatch + ", which the index of a valid stream never does"}
	}
	return nil
}

// indexIDs rebuilds the id index of a cache read from the stream f; a hash
// shared by two revs needs their ids. It returns a mismatch when two revs
// the cache records hold the same id (which a cache never records).
func (st *chainState) indexIDs(f io.ReaderAt) (string, error) {
	st.ids = make(map[uint64]int64, len(st.idHashes))
	var clash []int64
	for i, h := range st.idHashes {
		if _, taken := st.ids[h]; taken {
			clash = append(clash, int64(i)+1)
			continue
		}
		st.ids[h] = int64(i) + 1
	}
	for _, r := range clash {
		h := st.idHashes[r-1]
		r0 := st.ids[h]
		id0, err := st.readID(f, r0)
		if err != nil {
			return "", err
		}
		id1, err := st.readID(f, r)
		if err != nil {
			return "", err
		}
		if id0 == id1 {
			return fmt.Sprintf("it records revs %d and %d with the same id", r0, r), nil
		}
		if st.exact == nil {
			st.exact = map[string]int64{}
		}
		if _, ok := st.exact[id0]; !ok {
			st.exact[id0] = r0
		}
		st.exact[id1] = r
	}
	return "", nil
}
