// Package validate checks a run file against the machine without starting
// a run: what `obversa validate` reports (docs/cli.md). Every problem is an
// hclv2.Diagnostic at its place in the run file, so it reads like the run
// file's own mistakes.
//
// File runs, in order — the run file first, then each plugin in turn —
// stopping only where a later check would repeat an earlier failure:
//
//  1. decoding (hcl.DecodeFile): syntax, names, references, the workspace
//     root; then the lock file (hcl.DecodeLockFile);
//  2. the plugin's file (hcl.CheckPluginFile): the path exists, is a
//     regular file and may be executed;
//  3. its pin (hcl.CheckPin): a run file sha256 the lock file
//     contradicts, or no pin anywhere (a warning: `obversa run` refuses
//     it, `obversa plugin lock` fixes it);
//  4. each pinned binary's bytes (launch.CheckSource): its digest is the
//     pinned one, and where trusted_keys apply its signature verifies;
//  5. with Options.Plugins, each pinned plugin is launched from a copy in
//     a temporary plugin cache, as a run would launch it (handshake,
//     health, Describe), and its Configure runs on the block's config;
//     the plugin's diagnostics are placed at the config attribute, or at
//     the nested key a diagnostic's attribute path names
//     (hcl.Plugin.ConfigRange);
//  6. the size of the run's definition and plan, the record's first
//     event: larger than storage.max_batch_bytes, `obversa run` would
//     refuse to record it (checkRecordable).
//
// Nothing is written: not the lock file, not the run's storage directory.
// ConfigDiagnostics is the same placement for `obversa run`, which refuses
// a configuration its plugin rejects. It places at most
// MaxPluginDiagnostics of a plugin's diagnostics, each cut to
// MaxDiagnosticBytes, and counts the rest in one more (hcl.Omitted).
package validate
