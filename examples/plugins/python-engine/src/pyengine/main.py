"""The plugin's entry point: the checks of the handshake, then the server.

Started by its launcher (build.py writes it), which checks every file it
imports against the digests the launcher carries. The magic cookie and the
protocol version are checked before anything heavy is imported, so that a
program started by hand refuses at once; server.py does the rest.
docs/writing-plugins.md describes each step for any language.
"""

import os
import sys

# The host's magic cookie (plugin.Handshake): it only tells the program that
# the Obversa host started it.
COOKIE_KEY = "OBVERSA_PLUGIN_MAGIC_COOKIE"
COOKIE_VALUE = "9b21c5bb0baf13972267b38f0da838c1fac3c57abfc5960e414c94d616c5fa9f"

# go-plugin's core protocol version, and the application protocol versions
# (plugin.ProtocolVersion) this plugin speaks.
CORE_PROTOCOL_VERSION = 1
PROTOCOL_VERSIONS = (1,)


def refuse(message):
    """Explains on stderr why the plugin will not start, and exits 1."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    sys.exit(1)


def negotiate(offered):
    """Returns the highest protocol version both the host (offered, "1,2")
    and this plugin speak, or None."""
    versions = set()
    for v in (offered or "1").split(","):
        try:
            versions.add(int(v.strip()))
        except ValueError:
            pass
    common = versions.intersection(PROTOCOL_VERSIONS)
    return max(common) if common else None


def main():
    if os.environ.get(COOKIE_KEY) != COOKIE_VALUE:
        refuse("This program is an Obversa engine plugin: the Obversa host starts it (obversa run) and talks "
               "to it over gRPC.\nIt is not meant to be run by hand.")
    version = negotiate(os.environ.get("PLUGIN_PROTOCOL_VERSIONS"))
    if version is None:
        refuse("python-engine speaks plugin protocol versions %s; the host offered %s"
               % (",".join(map(str, PROTOCOL_VERSIONS)), os.environ.get("PLUGIN_PROTOCOL_VERSIONS")))
    from .server import serve
    serve(version)
