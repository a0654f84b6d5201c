// Package canonjson writes JSON strings in their RFC 8785 canonical form
// (docs/architecture.md#the-record): the one escaping the record's
// canonical text, the executor's hand-written event data and the store's
// search for secrets in that text all use, so the three cannot drift
// apart. It is a leaf (standard library only) shared by the store and the
// host.
package canonjson
