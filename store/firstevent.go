package store

import "time"

// FirstEventBytes returns the bytes an unnamed event of type typ with the
// canonical JSON data takes as a record's first line, appended alone
// (rev 1, a batch of one, a UUID for its id, no previous digest): what
// Policy.MaxBatchBytes limits for that Append. It is how `obversa
// validate` measures graph:run-started exactly as `obversa run` records
// it, envelope included. The data is copied into the line verbatim and
// the digest has a fixed length, so the envelope is encoded around empty
// data and len(data) added: neither a copy of data (megabytes for a run
// file with large prompts) nor a digest over it is made to measure it.
func FirstEventBytes(typ string, data []byte) int64 {
	line, _ := encodeLine(nil, 1, 1, "00000000-0000-4000-8000-000000000000", typ, time.Now(), nil, "")
	return int64(len(line)) + int64(len(data))
}
