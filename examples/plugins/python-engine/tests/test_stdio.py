"""Tests of pyengine.stdio: stdout after the handshake reaches GRPCStdio."""

import os
import subprocess
import sys
import textwrap
import unittest

# The child captures its stdout, writes to it from Python, from C-level
# writes and from a child process, then reports what StreamStdio streams on
# the real stdout it got back from capture().
CHILD = textwrap.dedent("""
    import os, subprocess, sys
    from pyengine.log import Logger
    from pyengine.stdio import Stdio

    class Context:
        def add_callback(self, fn):
            return True

    stdio = Stdio(Logger("test", sys.stderr))
    real = stdio.capture()
    print("from print")
    os.write(1, b"from fd 1\\n")
    subprocess.run(["echo", "from a child"], check=True)
    sys.stdout.flush()
    got = b""
    stream = stdio.StreamStdio(None, Context())
    while got.count(b"\\n") < 3:
        msg = next(stream)
        assert msg.channel == msg.STDOUT, msg
        got += msg.data
    real.write(b"STREAMED " + got.replace(b"\\n", b"|") + b"\\n")
""")


class StdioTest(unittest.TestCase):
    def test_stdout_is_streamed_not_printed(self):
        p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, timeout=30, env=dict(os.environ))
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        out = p.stdout.decode()
        self.assertTrue(out.startswith("STREAMED "), "the real stdout got %r" % out)
        self.assertEqual(out.count("\n"), 1, "anything but the one line reached the real stdout: %r" % out)
        for line in ("from print", "from fd 1", "from a child"):
            self.assertIn(line + "|", out)


if __name__ == "__main__":
    unittest.main()
