package store

import "os"

// HostEnv names the environment variable that overrides the host name
// recorded for a run's owner (Holder.Host), so that two processes on one
// machine can act as two hosts (tests of a takeover between hosts).
const HostEnv = "OBVERSA_HOST"

// HostName returns the name this process gives its host in holder records:
// $OBVERSA_HOST when set, else os.Hostname ("" when that fails).
func HostName() string {
	if h := os.Getenv(HostEnv); h != "" {
		return h
	}
	h, _ := os.Hostname()
	return h
}
