// Package stream keeps a run's live engine output beside its record:
// stream.jsonl in the run's directory, one JSON object per line (Line),
// written by the worker as each engine call streams text, thinking, tool
// use and results, and usage, and read by `obversa logs` and the live view
// of `obversa run` (docs/cli.md, "obversa logs").
//
// It is not the record. Nothing in it is fsynced or hash-chained, and
// nothing decides anything from it: the record holds each call's result,
// usage and parts; the stream holds how they arrived. A crash may lose its
// last lines, which is why no reader trusts it for more than display.
//
// Writing costs the attempt one buffered write per event: lines go to a
// 64 KiB buffer that a background goroutine flushes every FlushInterval
// (and Close), so a reader is at most that far behind and an attempt never
// waits for the disk. Known secrets are redacted before a byte is written: each line
// as a whole (every form the record recognises, JSON escapes included),
// and text deltas of one call as one text, holding back the few bytes that
// could be the start of a secret split across two deltas.
//
// The file is capped (storage.max_stream_bytes, default 64 MiB per run).
// The stream is kept in two segments, stream.jsonl and stream.jsonl.1, of
// at most half the cap each: when the current segment is full it becomes
// stream.jsonl.1, dropping the older one, and a new stream.jsonl starts
// with one "dropped" line per position that lost output, saying how many
// bytes — so what goes first is the oldest output, and every attempt whose
// output went says so. A follower (Follow) notices the rename by the
// file's identity, reads the old segment to its end and carries on at the
// start of the new one.
package stream
