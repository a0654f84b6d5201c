// Package launch starts a run's plugins the one way the host allows: from
// a content-addressed copy of the pinned binary (the plugin cache inside the
// storage directory, docs/plugins.md), verified again at every launch — hashed,
// or still showing the stamp it had while the host read it (OpenCached,
// Options.Stamps) — and executed from the open file it verified when
// confined, with an allow-listed environment
// (docs/architecture.md#the-watchdog), configured from the stored plan, and checked with the plugin's own
// grpc.health.v1 service before use.
//
// It also holds the host's side of plugin trust (docs/plugins.md, docs/plugins.md):
// TrustedKeys resolves a run file's trusted_keys, CheckSource checks a source
// binary against its pin and, where keys apply, its minisign signature;
// Cache, VerifyCached and OpenCached keep the pinned copies (ErrPluginChanged,
// PLUGIN_CHANGED, when one changes); CheckKey, Checked and RecordChecked
// keep the receipts of passed pre-run checks; Install verifies a distributed plugin
// found by the discovery grammar (BinaryPrefix) and places it in a plugins
// directory. Signature and checksum sidecars are never executed.
//
// One process per plugin per worker serves every attempt (docs/architecture.md#performance-budget).
package launch
