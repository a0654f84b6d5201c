// Package launch starts a run's plugins the one way the host allows: from
// a content-addressed copy of the pinned binary (the plugin cache inside the
// storage directory, DESIGN §7), re-verified by SHA-256 through go-plugin's
// SecureConfig at every launch, with an allow-listed environment (DESIGN
// §6), configured from the stored plan, and checked with the plugin's own
// grpc.health.v1 service before use.
//
// One process per plugin per worker serves every attempt (DESIGN §9).
package launch
