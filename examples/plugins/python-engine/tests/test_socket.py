"""Tests of pyengine.server.socket_path: where the engine listens, and that
what it made for that goes when it stops."""

import os
import tempfile
import unittest
from unittest import mock

from pyengine import server


class SocketPathTest(unittest.TestCase):
    def test_listens_in_the_directory_the_host_gives(self):
        with tempfile.TemporaryDirectory() as given, mock.patch.dict(os.environ, {"PLUGIN_UNIX_SOCKET_DIR": given}):
            path, remove = server.socket_path()
            self.assertEqual(os.path.dirname(path), given)
            self.assertEqual(os.listdir(given), [], "nothing is made there before the socket")
            open(path, "w").close()
            remove()
            self.assertEqual(os.listdir(given), [])
            remove()  # again: nothing to remove is no error

    def test_without_a_host_its_own_directory_is_removed(self):
        env = {k: v for k, v in os.environ.items() if k != "PLUGIN_UNIX_SOCKET_DIR"}
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, env, clear=True), \
                mock.patch.object(tempfile, "tempdir", tmp):
            path, remove = server.socket_path()
            self.assertEqual(os.path.dirname(os.path.dirname(path)), tmp)
            open(path, "w").close()
            remove()
            self.assertEqual(os.listdir(tmp), [])


if __name__ == "__main__":
    unittest.main()
