"""Tests of pyengine.engine: configuration, rate limits, keys, cancellation."""

import io
import os
import threading
import time
import unittest
from unittest import mock

from pyengine import engine as eng
from pyengine.log import Logger
from pyengine.protocol import pb


def new_engine(config=b""):
    e = eng.Engine(Logger("test", io.StringIO()))
    resp = e.configure(config)
    assert not resp.diagnostics, resp
    return e


def drain(gen):
    """Runs a Run generator to its end and returns (events, terminal)."""
    events = []
    try:
        while True:
            events.append(next(gen))
    except StopIteration as stop:
        return events, stop.value


class ConfigureTest(unittest.TestCase):
    def test_diagnostics_name_the_attribute(self):
        cases = [
            (b'{"answer_prefix": 3}', "answer_prefix"),
            (b'{"report_usage": "yes"}', "report_usage"),
            (b'{"rate_limits": {"m": true}}', "rate_limits.m"),
            (b'{"rate_limits": []}', "rate_limits"),
            (b'{"api_keys": {"p": ""}}', "api_keys.p"),
            (b'{"typo": 1}', "typo"),
            (b'[1]', ""),
            (b'{', ""),
        ]
        for config, attribute in cases:
            with self.subTest(config=config):
                e = new_engine()
                diags = e.configure(config).diagnostics
                self.assertEqual(len(diags), 1, diags)
                self.assertEqual(diags[0].severity, pb.SEVERITY_ERROR)
                self.assertEqual(diags[0].attribute, attribute)
                self.assertEqual(e.config, eng.DEFAULTS, "a refused config must not replace the previous one")


class RateLimitTest(unittest.TestCase):
    def test_retry_after_is_the_time_until_the_window_frees(self):
        e = new_engine(b'{"rate_limits": {"m": 2}}')
        target = pb.Identity(provider="p", model="m")
        now = [1000.0]
        with mock.patch.object(eng.time, "monotonic", lambda: now[0]):
            e._take_rate(target)
            now[0] += 10
            e._take_rate(target)
            now[0] += 5
            with self.assertRaises(eng.Failure) as cm:
                e._take_rate(target)
            self.assertEqual(cm.exception.kind, "rate_limit")
            self.assertEqual(cm.exception.retry_after_ms, 45000)
            self.assertEqual((cm.exception.provider, cm.exception.model), ("p", "m"))
            now[0] += 45
            e._take_rate(target)  # the first Run left the window

    def test_message_counts_runs_in_agreeing_words(self):
        for limit, words in ((1, "allows 1 run a minute"), (2, "allows 2 runs a minute")):
            e = new_engine(b'{"rate_limits": {"m": %d}}' % limit)
            target = pb.Identity(provider="p", model="m")
            for _ in range(limit):
                e._take_rate(target)
            with self.assertRaises(eng.Failure) as cm:
                e._take_rate(target)
            self.assertIn(words, cm.exception.message)

    def test_other_models_are_not_limited(self):
        e = new_engine(b'{"rate_limits": {"m": 1}}')
        for _ in range(5):
            e._take_rate(pb.Identity(provider="p", model="other"))


class KeyTest(unittest.TestCase):
    def test_missing_key_is_auth_and_present_key_admits(self):
        e = new_engine(b'{"api_keys": {"hosted": "PYENGINE_TEST_KEY"}}')
        target = pb.Identity(provider="hosted", model="m")
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("PYENGINE_TEST_KEY", None)
            with self.assertRaises(eng.Failure) as cm:
                e.admit(target)
            self.assertEqual(cm.exception.kind, "auth")
            os.environ["PYENGINE_TEST_KEY"] = "k"
            self.assertTrue(e.admit(target).HasField("selection"))


class CancelTest(unittest.TestCase):
    def test_cancel_ends_a_delay_at_once_with_the_reason(self):
        e = new_engine()
        e.arm("a1", pb.Scenario(kind=pb.SCENARIO_KIND_DELAY, delay_ms=60000))
        call = eng.Call()
        gen = e.run(pb.RunRequest(attempt_id="a1", prompt="p"), call)
        self.assertEqual(next(gen).text.text, "waiting")
        threading.Timer(0.1, call.cancel, [eng.Failure("aborted", "cancelled")]).start()
        start = time.monotonic()
        with self.assertRaises(eng.Failure) as cm:
            drain(gen)
        self.assertEqual(cm.exception.kind, "aborted")
        self.assertLess(time.monotonic() - start, 3)


if __name__ == "__main__":
    unittest.main()
