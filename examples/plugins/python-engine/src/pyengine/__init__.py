"""An Obversa engine plugin in Python, written against the wire protocol alone.

main     the entry point: the cookie and the protocol version, then the server
server   the gRPC server, mTLS, the handshake line, health, controller shutdown
engine   Describe, Configure, Admit, Run and the Conformance scenarios
tls      automatic mTLS: a self-signed certificate for localhost
stdio    go-plugin's GRPCStdio: stray output forwarded to the host's log
log      hclog JSON lines on stderr
protocol the generated code of the vendored protocol files (plugin/proto)
"""
