"""Standard output after the handshake, as go-plugin's GRPCStdio.

The host reads the plugin's stdout for the handshake line and nothing else.
capture() therefore moves file descriptor 1 to a pipe before anything else
runs: whatever the plugin, a library or a child process writes to stdout
later goes into that pipe, and the handshake line goes to a private copy of
the real stdout. The host's go-plugin client calls GRPCStdio.StreamStdio
once it has connected and logs what arrives as the plugin's stdout; until
then (or without such a call) at most LIMIT bytes are kept, oldest dropped.
Standard error is left alone: it carries the hclog lines the host parses.
"""

import collections
import os
import sys
import threading

from .protocol import stdio_pb2, stdio_pb2_grpc

# Bytes of stdout kept while no StreamStdio call takes them.
LIMIT = 1 << 20


class Stdio(stdio_pb2_grpc.GRPCStdioServicer):
    """Captures fd 1 and serves it as plugin.GRPCStdio."""

    def __init__(self, log):
        self.log = log
        self._cond = threading.Condition()
        self._chunks = collections.deque()
        self._size = 0
        self._dropped = 0
        self._closed = False

    def capture(self):
        """Redirects fd 1 (and so sys.stdout) to the pipe this service reads
        and returns a binary file for the real stdout, on a descriptor that
        children do not inherit, for the handshake line."""
        real = os.fdopen(os.dup(1), "wb", buffering=0)
        r, w = os.pipe()
        os.dup2(w, 1)
        os.close(w)
        sys.stdout.reconfigure(line_buffering=True)
        threading.Thread(target=self._read, args=(r,), name="stdio", daemon=True).start()
        return real

    def _read(self, fd):
        while True:
            data = os.read(fd, 65536)
            if not data:
                return
            with self._cond:
                self._chunks.append(data)
                self._size += len(data)
                while self._size > LIMIT and len(self._chunks) > 1:
                    old = self._chunks.popleft()
                    self._size -= len(old)
                    self._dropped += len(old)
                self._cond.notify_all()

    def close(self):
        """Ends every StreamStdio call (at shutdown)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def StreamStdio(self, request, context):
        """Streams captured stdout until the plugin stops or the host goes."""
        context.add_callback(self.close)
        while True:
            with self._cond:
                while not self._chunks and not self._closed:
                    self._cond.wait()
                if not self._chunks:
                    return
                data = self._chunks.popleft()
                self._size -= len(data)
                dropped, self._dropped = self._dropped, 0
            if dropped:
                self.log.warn("stdout output dropped while the host was not reading it", bytes=dropped)
            yield stdio_pb2.StdioData(channel=stdio_pb2.StdioData.STDOUT, data=data)
