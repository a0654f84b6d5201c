// Package canonjson holds the record's RFC 8785 canonical JSON
// (docs/architecture.md#the-record): Data, the canonical form of event data
// and the refusal of data whose canonical form would change it, which the
// file record's appends and the conformance kit's check of results both
// apply; and AppendString, the one string escaping the record's canonical
// text, the executor's hand-written event data and the store's search for
// secrets in that text all use. It is a leaf (the standard library and the
// JCS library) shared by the store, the host and the conformance kit.
package canonjson
