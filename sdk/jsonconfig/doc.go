// Package jsonconfig decodes a plugin's configuration (the run file's
// `config` block, delivered to Configure as JSON) strictly, and reports
// the author's mistakes as diagnostics named by attribute path
// ("responses[0].fail.kind"): wrong types, invalid JSON, keys no field
// accepts. Plugin authors use it to give the same quality of error the host
// gives for the run file.
package jsonconfig
