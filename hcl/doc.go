// Package hcl decodes Obversa's configuration files — the run file
// (run.hcl, docs/run-file.md) and the plugin lock file (obversa.lock.hcl,
// docs/plugins.md) — into validated Go values, and renders the templates a run file
// leaves for dispatch time.
//
// The package is named hcl; it imports the upstream library as hclv2 so
// that a reader never has to guess which "hcl" a name belongs to. It
// imports nothing else of Obversa's.
//
// # Decoding and diagnostics
//
// Decode and DecodeFile validate the whole file before returning: every
// user mistake found is an hclv2.Diagnostic whose Subject is the source
// range (file:line:col), whose Summary says what is wrong and whose Detail
// says how to fix it, with a "Did you mean …?" suggestion where a name is
// close to a declared one. Diagnostics are data, never Go errors; the
// returned value is nil exactly when they contain an error. Checks that
// need another declaration (a node's lane, a lane's adapter) are skipped
// when that declaration is itself broken, so one mistake is reported once.
// WriteDiagnostics prints them with source snippets, each summary once;
// DiagnosticsJSON gives their machine-readable form.
//
// Decoding looks at the file system only where the file names something
// that must exist: the workspace root must be an existing directory (one
// outside the run file's directory, after symlinks, is a warning unless
// allow_outside = true) and a prompt_file must be a regular file. What a
// run needs from its plugins is checked after decoding: CheckPluginFiles
// (each path an executable regular file, examined without opening it) and
// CheckPins (the run file's sha256 against the lock file; a plugin pinned
// nowhere is a warning). Plugin.Ranges and Plugin.ConfigRange place later
// diagnostics about a plugin — its digest, its Configure answer — in the
// run file.
//
// Relative paths in a run file (workspace.root, storage.directory, plugin
// path, prompt_file) are resolved against the run file's directory made
// absolute. Defaults are the Default… constants. The only syntax note worth
// repeating: HCL allows several attributes on one line only in an object
// value ({ a = 1, b = 2 }), never in a block, so blocks are written one
// attribute per line.
//
// The run file, in brief (see docs/run-file.md for a full example):
//
//	workspace { root, provider, allow_outside }   # provider: git | files | none
//	storage { directory, namespace, max_event_payload_bytes, max_batch_bytes,
//	          max_artifact_bytes, max_total_artifact_bytes_per_run,
//	          known_secrets_from_env, max_log_bytes,
//	          max_stream_bytes }
//	limits { timeout, max_dispatches, max_input_tokens, max_output_tokens,
//	         stop_on_unmeasured, plugin_memory }
//	restart { max_restarts, initial_backoff, max_backoff }
//	teardown_grace = "5s"
//	preflight { timeout }
//	trusted_keys = [...]
//	plugin "<name>" { type, path, sha256, args, env, pass_env, config, trusted_keys,
//	                  start_timeout,
//	                  confine { write, deny_read, network, memory, required } }
//	                                   # type: engine | node | policy
//	lane "<name>" { requested, known_substitutions, fallbacks,
//	                preflight { live, unsupported_static } }
//	graph "dag" { global_concurrency, keyed_concurrency, stop_on_error,
//	              retry_cap_per_node, approval, policy, policy_timeout,
//	              node "<id>" { kind, lane | binding, prompt | prompt_file,
//	                            input, depends_on, retry_safe, timeout, key,
//	                            approval, for_each, max_items }
//	              loop "<id>" { kind, depends_on, max_rounds, review, until,
//	                            node "<member>" { … } } }
//
// A loop is one vertex of the graph; its node blocks (members) run once
// per round, their depends_on naming other members only, until the review
// member's verdict passes or max_rounds (1..100) rounds have run. Node,
// loop and member ids share one namespace. for_each is a constant list of
// strings or object (static), or a template over an upstream result
// (dynamic, rendered by Scope.Items when the node is ready); max_items
// (default DefaultMaxItems) bounds it. docs/run-file.md has the rules.
//
// Durations are Go duration strings ("30m", "1h30m"). Sizes (memory,
// plugin_memory) are bytes or a number with a unit (ParseSize); every path
// (workspace.root, storage.directory, a plugin's path, prompt_file,
// confine paths) may start with "~" or "~/", the home directory
// (docs/run-file.md, "Paths"). Names of plugins,
// lanes, nodes, concurrency keys and the namespace follow the id grammar
// [A-Za-z0-9][A-Za-z0-9._-]{0,127}. Attributes other than prompt and input
// must be constants; they may call the template functions listed below. A
// null value means "not set".
//
// # Templates
//
// A node's prompt and the strings of its input may refer to the results of
// other nodes, which exist only at dispatch time:
//
//	prompt = "Summarise: ${input.results.draft} (${input.results.count.stdout})"
//
// A reference is input.results.<node> (or input.results["<node>"], needed
// when the id contains '-') followed by any attributes and indexes. A node
// may refer only to its transitive dependencies; a finalizer, which has no
// edges, may refer to any node that is not a finalizer. A loop's result is
// an object of its members' last-round results (input.results.<loop>.<member>),
// a for_each node's an object by key. Inside a loop's members (and its
// until) a template may also use loop.round (1-based), loop.findings (the
// last failed review's findings as text) and loop.previous.<member> (the
// member's result in the previous round, null in round 1), and
// input.results.<member> for this round's result of a member it depends
// on; in a for_each node, each.key and each.value. Templates may use
// directives (%{ if }, %{ for }) and call only these functions: can, chomp,
// format, indent, join, jsondecode, jsonencode, length, lower, replace,
// split, trimspace, try and upper (TemplateFunctions). A reference inside
// try() or can() may fail without failing the render, which is how a
// finalizer handles a node that did not pass.
//
// Templates are not evaluated when the file is decoded (beyond a check with
// unknown results that catches wrong argument counts and types); they are
// stored as template-mode source text, the form hclsyntax.ParseTemplate
// reads, so the stored run definition carries them verbatim:
//
//   - a quoted string or heredoc is rewritten so that it renders exactly as
//     HCL would have: backslash escapes, "~" strip markers and "<<-"
//     indentation are applied to its literal text, which is then re-escaped
//     ("${" as "$${", "%{" as "%%{"); interpolations and directives are
//     copied as written;
//   - a prompt_file's content is template source already and is kept as is
//     (regular files of at most MaxPromptFileBytes);
//   - a constant prompt or input string is stored escaped, so it renders to
//     itself;
//   - any other expression over results, such as input = input.results.fetch,
//     is stored as "${…}", a single interpolation.
//
// RenderPrompt and RenderInput evaluate the stored source with
// input = { results = { <node> = <result> } }, each result decoded from the
// JSON the caller recorded; a Scope adds loop and each (Scope.Prompt,
// Scope.Input), renders an until condition (Scope.Condition) and a dynamic
// for_each (Scope.Items). length counts a string's characters as well as
// a collection's elements. As in HCL, a template that is exactly one
// interpolation yields the value itself rather than a string, so an input
// field "${input.results.fetch}" passes a whole object through. Render
// failures are *RenderError values wrapping ErrMissingResult,
// ErrMissingAttribute, ErrInvalidResult, ErrInvalidInput or ErrTemplate.
//
// # Lock file
//
// obversa.lock.hcl sits beside the run file (LockFilePath), is committed
// with it, and pins each plugin binary; path is recorded as the run file
// writes it (Plugin.LockPath), so it is relative to the same directory:
//
//	# This file is maintained by "obversa plugin lock". Manual edits may be lost.
//
//	plugin "claude" {
//	  path      = "bin/cmd-engine"
//	  sha256    = "<64 lower-case hex>"
//	  key_id    = "<16 hex digits>"          # only when signed
//	  signature = "sha256:<64 lower-case hex>" # only when signed
//	}
//
// DecodeLockFile treats a missing file as an empty LockFile. EncodeLockFile
// writes the blocks sorted by name, so the same content always produces the
// same bytes.
package hcl
