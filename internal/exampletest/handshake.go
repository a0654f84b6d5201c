package exampletest

import "time"

// HandshakeTimeout is the handshake bound (conformance.Options) the
// examples' conformance checks of interpreted plugins use, in place of the
// host's 10 s default: a node or python interpreter starting on a 2-core
// machine that runs two test suites at once took longer than 10 s to print
// its handshake line, and these checks are of the plugin's answers, not of
// the machine's speed. A plugin that never answers still fails, a minute
// later.
const HandshakeTimeout = time.Minute
