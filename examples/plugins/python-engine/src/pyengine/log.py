"""Logging for an Obversa plugin: one hclog JSON object per line on stderr.

The host parses each line and re-logs it under the plugin's name at its
level. Standard output belongs to the handshake line alone.
"""

import datetime
import json
import sys
import threading

LEVELS = ("trace", "debug", "info", "warn", "error")

_lock = threading.Lock()


def hclog_time(t=None):
    """Formats t (default: now) as go-plugin parses "@timestamp":
    2006-01-02T15:04:05.000000Z07:00 (microseconds, UTC)."""
    t = t or datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Logger:
    """Writes hclog JSON lines for one module to a stream (default: the
    process's stderr as it was at start, so a later redirection of
    sys.stderr does not reach the host's log parser)."""

    def __init__(self, module, stream=None):
        self.module = module
        self.stream = stream or sys.__stderr__

    def log(self, level, message, **fields):
        entry = {"@level": level, "@message": message, "@module": self.module, "@timestamp": hclog_time()}
        for key, value in fields.items():
            entry[key] = value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else str(value)
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with _lock:
            self.stream.write(line)
            self.stream.flush()

    def trace(self, message, **fields):
        self.log("trace", message, **fields)

    def debug(self, message, **fields):
        self.log("debug", message, **fields)

    def info(self, message, **fields):
        self.log("info", message, **fields)

    def warn(self, message, **fields):
        self.log("warn", message, **fields)

    def error(self, message, **fields):
        self.log("error", message, **fields)
