"""The engine behind the gRPC services.

Describe, Configure, Admit and Run of obversa.plugin.v1.Engine, and the
scenarios of the optional Conformance service, on the generated message
classes. server.py carries them over gRPC.

The "model" is the engine itself: it answers every prompt with a quote of
it. It counts one token per four characters of prompt and answer, which is
its own measurement, so usage is reported; with report_usage = false it
reports unknown usage, never zero. Two settings make it fail the way a
hosted model API does: api_keys names, per provider, the environment
variable its key comes from (no key: auth), and rate_limits allows, per
model, so many Runs a minute (more: rate_limit with the time until the next
one is allowed).
"""

import collections
import json
import math
import os
import threading
import time

from .protocol import pb

NAME = "python"
VERSION = "0.1.0"

FAILURE_KINDS = ("auth", "billing", "missing_cli", "model_unavailable", "invalid_config", "quota",
                 "rate_limit", "transient", "timeout", "aborted", "unknown")

SCENARIOS = ("FAILURE", "DELAY", "UNKNOWN_USAGE", "TOOL_EVENTS", "LATE_FINAL", "PANIC")

# Runs the engine accepts at once; server.py sizes its thread pool from it.
MAX_CONCURRENCY = 32

# Settlements kept for the Conformance service's Settled call.
MAX_SETTLEMENTS = 1024

DEFAULTS = {"answer_prefix": "", "report_usage": True, "api_keys": {}, "rate_limits": {}}


class Failure(Exception):
    """A typed failure; kind is one of FAILURE_KINDS."""

    def __init__(self, kind, message, retry_after_ms=0, provider="", model=""):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after_ms = retry_after_ms
        self.provider = provider or ""
        self.model = model or ""

    def to_proto(self):
        return pb.Failure(kind=pb.FailureKind.Value("FAILURE_KIND_" + self.kind.upper()), message=self.message,
                          retry_after_ms=self.retry_after_ms, provider=self.provider, model=self.model)


def wire_failure(err):
    """Turns any exception into a Failure message: a Failure keeps its kind,
    anything else (a bug, an unexpected exception) is unknown."""
    if not isinstance(err, Failure):
        err = Failure("unknown", "python engine: %s: %s" % (type(err).__name__, err))
    return err.to_proto()


class Call:
    """The cancellation of one Run: cancel(failure) ends every wait of the
    call with that failure (aborted when the host cancels, timeout at the
    attempt's deadline)."""

    def __init__(self):
        self._event = threading.Event()
        self.reason = None

    def cancel(self, failure):
        if self.reason is None:
            self.reason = failure
        self._event.set()

    def check(self):
        """Raises the cancellation's failure once the call was cancelled."""
        if self._event.is_set():
            raise self.reason

    def sleep(self, seconds):
        """Waits seconds, or raises the failure at once when cancelled."""
        if self._event.wait(seconds):
            raise self.reason


def _tokens(s):
    return max(1, math.ceil(len(s) / 4))


def _split(s, n):
    size = max(1, math.ceil(len(s) / n))
    return [s[i:i + size] for i in range(0, len(s), size)]


def _text_part(text, final=False):
    return pb.Part(kind=pb.PART_KIND_TEXT, text=text, final=final)


def _check_config(v):
    """Returns the diagnostics of a decoded config object."""
    diags = []

    def error(summary, attribute, detail=""):
        diags.append(pb.Diagnostic(severity=pb.SEVERITY_ERROR, summary=summary, detail=detail, attribute=attribute))

    for key, value in v.items():
        if key == "answer_prefix" and not isinstance(value, str):
            error("answer_prefix must be a string", key)
        elif key == "report_usage" and not isinstance(value, bool):
            error("report_usage must be true or false", key)
        elif key == "api_keys":
            if not isinstance(value, dict):
                error("api_keys must be an object: provider = \"ENVIRONMENT_VARIABLE\"", key)
                continue
            for provider, env in value.items():
                if not isinstance(env, str) or not env:
                    error("api_keys.%s must name an environment variable" % provider, "%s.%s" % (key, provider))
        elif key == "rate_limits":
            if not isinstance(value, dict):
                error("rate_limits must be an object: model = runs per minute", key)
                continue
            for model, limit in value.items():
                if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                    error("rate_limits.%s must be a whole number of runs per minute, at least 1" % model,
                          "%s.%s" % (key, model))
        elif key not in DEFAULTS:
            error("unknown python engine setting \"%s\"" % key, key,
                  "known settings: " + ", ".join(sorted(DEFAULTS)))
    return diags


class Engine:
    """The engine's state: its configuration, the rate windows, and what the
    Conformance service keeps (armed scenarios, settlements, model calls)."""

    def __init__(self, log):
        self.log = log
        self.config = dict(DEFAULTS)
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._armed = {}  # attempt id -> Scenario
        self._settlements = collections.OrderedDict()  # attempt id -> [settled, terminal]
        self._windows = collections.defaultdict(collections.deque)  # model -> Run start times
        self.model_calls = 0

    def describe(self):
        return pb.DescribeResponse(
            name=NAME, version=VERSION, types=[pb.PLUGIN_TYPE_ENGINE],
            capabilities=pb.Capabilities(admit=True, structured_output=True, tools=False,
                                         max_concurrency=MAX_CONCURRENCY),
            failure_kinds=[pb.FailureKind.Value("FAILURE_KIND_" + k.upper()) for k in FAILURE_KINDS])

    def configure(self, raw):
        """Checks the run file's config (JSON bytes) and answers diagnostics;
        the previous configuration stays when there are errors."""
        text = raw.decode("utf-8", "replace").strip() if raw else ""
        try:
            v = json.loads(text) if text else None
        except ValueError as e:
            return pb.ConfigureResponse(diagnostics=[pb.Diagnostic(
                severity=pb.SEVERITY_ERROR, summary="config is not valid JSON: %s" % e)])
        if v is None:
            self.config = dict(DEFAULTS)
            return pb.ConfigureResponse()
        if not isinstance(v, dict):
            return pb.ConfigureResponse(diagnostics=[pb.Diagnostic(
                severity=pb.SEVERITY_ERROR, summary="python engine config must be an object",
                detail="got %s" % type(v).__name__)])
        diags = _check_config(v)
        if not diags:
            self.config = dict(DEFAULTS, **v)
        return pb.ConfigureResponse(diagnostics=diags)

    def _need_key(self, target):
        """Raises auth when the target's provider needs an API key that the
        plugin's environment lacks."""
        env = self.config["api_keys"].get(target.provider)
        if env and not os.environ.get(env):
            raise Failure("auth", "provider %s needs an API key in %s, which is not set (pass it to the plugin "
                          "with pass_env)" % (target.provider, env), provider=target.provider, model=target.model)

    def admit(self, target):
        """Checks a target statically: it needs a model, and the key of its
        provider when one is configured."""
        if not target.model:
            raise Failure("invalid_config", "the target names no model", provider=target.provider)
        self._need_key(target)
        return pb.AdmitResponse(selection=pb.AdmitResponse.Selection(identity=target))

    def _take_rate(self, target):
        """Counts a Run of the target's model against its rate limit, or
        raises rate_limit with the time until the next Run is allowed."""
        limit = self.config["rate_limits"].get(target.model)
        if not limit:
            return
        now = time.monotonic()
        with self._lock:
            window = self._windows[target.model]
            while window and window[0] <= now - 60:
                window.popleft()
            if len(window) >= limit:
                wait_ms = max(1, math.ceil((window[0] + 60 - now) * 1000))
                raise Failure("rate_limit", "model %s allows %d run%s a minute; retry after %d ms"
                              % (target.model, limit, "" if limit == 1 else "s", wait_ms), retry_after_ms=wait_ms,
                              provider=target.provider, model=target.model)
            window.append(now)

    def begin(self, attempt_id):
        """Records that the Run of attempt_id started; returns the function
        that records its terminal message."""
        if not attempt_id:
            return lambda terminal: None
        with self._lock:
            self._settlements[attempt_id] = [False, None]
            if len(self._settlements) > MAX_SETTLEMENTS:
                for old, rec in self._settlements.items():
                    if rec[0]:
                        del self._settlements[old]
                        break

        def settle(terminal):
            with self._lock:
                rec = self._settlements.get(attempt_id)
                if rec is not None:
                    rec[0], rec[1] = True, terminal
                self._settled.notify_all()
        return settle

    def run(self, req, call):
        """Makes one engine call: a generator that yields the stream's events
        and returns its terminal message. Raises Failure for a typed
        failure."""
        if req.workspace_mode == "read" and not req.tools:
            raise Failure("invalid_config", "workspace_mode \"read\" needs at least one tool to read the workspace "
                          "with, and the request names none")
        with self._lock:
            self.model_calls += 1
            scenario = self._armed.pop(req.attempt_id, None)
        if scenario is not None:
            return (yield from self._scenario(scenario, req, call))
        self._need_key(req.target)
        self._take_rate(req.target)
        prompt = req.prompt
        quoted = json.dumps(prompt if len(prompt) <= 200 else prompt[:200] + "\u2026", ensure_ascii=False)
        answer = "%spython answer to: %s" % (self.config["answer_prefix"], quoted)
        if req.output_schema:
            final = pb.Part(kind=pb.PART_KIND_STRUCTURED, json=json.dumps({"answer": answer}).encode(), final=True)
        else:
            for piece in _split(answer, 3):
                call.check()
                yield pb.RunMessage(text=pb.Delta(text=piece))
            final = _text_part(answer, True)
        return (yield from self._result(req, [final], answer))

    def _result(self, req, parts, answer, measured=None):
        """Yields the usage event when usage is measured and returns the
        terminal result."""
        if measured is None:
            measured = self.config["report_usage"]
        if measured:
            usage = pb.Usage(reported=pb.Usage.Reported(input=_tokens(req.prompt), output=_tokens(answer)))
            yield pb.RunMessage(usage=usage)
        else:
            usage = pb.Usage(unknown=pb.Usage.Unknown())
        return pb.RunMessage(result=pb.RunResult(parts=parts, usage=usage, requested=req.target,
                                                 effective=req.target, stop_reason="end_turn"))

    def _scenario(self, s, req, call):
        kind = pb.ScenarioKind.Name(s.kind)
        if kind == "SCENARIO_KIND_FAILURE":
            fk = pb.FailureKind.Name(s.failure_kind).replace("FAILURE_KIND_", "").lower()
            raise Failure(fk, "python engine scenario %s" % fk, retry_after_ms=1000 if fk == "rate_limit" else 0,
                          provider=req.target.provider, model=req.target.model)
        if kind == "SCENARIO_KIND_DELAY":
            yield pb.RunMessage(text=pb.Delta(text="waiting"))
            ms = s.delay_ms if s.delay_ms > 0 else 60000
            call.sleep(ms / 1000)
            answer = "waited %d ms" % ms
            yield pb.RunMessage(text=pb.Delta(text=answer))
            return (yield from self._result(req, [_text_part(answer, True)], answer, True))
        if kind == "SCENARIO_KIND_UNKNOWN_USAGE":
            answer = "usage of this answer was not measured"
            yield pb.RunMessage(text=pb.Delta(text=answer))
            return (yield from self._result(req, [_text_part(answer, True)], answer, False))
        if kind == "SCENARIO_KIND_TOOL_EVENTS":
            use = pb.ToolEvent(id="toolu_1", name="read_file", json=b'{"path":"README.md"}')
            res = pb.ToolEvent(id="toolu_1", name="read_file", json=b'{"content":"# README"}')
            yield pb.RunMessage(tool_use=use)
            yield pb.RunMessage(tool_result=res)
            answer = "README.md starts with a heading"
            yield pb.RunMessage(text=pb.Delta(text=answer))
            parts = [pb.Part(kind=pb.PART_KIND_TOOL_USE, tool_id=use.id, tool_name=use.name, json=use.json),
                     pb.Part(kind=pb.PART_KIND_TOOL_RESULT, tool_id=res.id, tool_name=res.name, json=res.json),
                     _text_part(answer, True)]
            return (yield from self._result(req, parts, answer, True))
        if kind == "SCENARIO_KIND_LATE_FINAL":
            # The simulated upstream: a delta, a broken connection, then the
            # final answer anyway. An answer that arrived is kept.
            answer = None
            for ev in ({"delta": "partial "}, {"error": "ECONNRESET"}, {"final": "partial answer kept after a transport failure"}):
                if "delta" in ev:
                    yield pb.RunMessage(text=pb.Delta(text=ev["delta"]))
                if "error" in ev:
                    self.log.warn("upstream transport failure; waiting for a late final answer", error=ev["error"])
                if "final" in ev:
                    answer = ev["final"]
            return (yield from self._result(req, [_text_part(answer, True)], answer, True))
        if kind == "SCENARIO_KIND_PANIC":
            raise RuntimeError("python engine scenario: an exception in the Run handler")
        raise Failure("invalid_config", "python engine cannot produce scenario %s" % kind)

    def scenarios(self):
        return pb.ScenariosResponse(kinds=[pb.ScenarioKind.Value("SCENARIO_KIND_" + s) for s in SCENARIOS])

    def arm(self, attempt_id, scenario):
        if pb.ScenarioKind.Name(scenario.kind).replace("SCENARIO_KIND_", "") not in SCENARIOS:
            raise Failure("invalid_config", "python engine cannot produce scenario %s" % scenario.kind)
        with self._lock:
            self._armed[attempt_id] = scenario
        return pb.ArmResponse()

    def settled(self, attempt_id, wait_ms):
        """Waits up to wait_ms for the Run of attempt_id to settle."""
        deadline = time.monotonic() + max(0, wait_ms) / 1000
        with self._lock:
            while True:
                rec = self._settlements.get(attempt_id)
                if rec is not None and rec[0]:
                    return pb.SettledResponse(started=True, settled=True, terminal=rec[1])
                left = deadline - time.monotonic()
                if left <= 0:
                    return pb.SettledResponse(started=rec is not None)
                self._settled.wait(left)
