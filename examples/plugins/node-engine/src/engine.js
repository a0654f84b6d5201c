'use strict';
// The engine behind the gRPC services: Describe, Configure, Admit and Run
// of obversa.plugin.v1.Engine, and the scenarios of the optional
// Conformance service. Messages are plain objects in the shape
// @grpc/proto-loader gives and takes (snake_case fields, enum names as
// strings, oneofs as one set field).
//
// The "model" is the engine itself: it answers every prompt with a quote of
// it. It counts one token per four characters of prompt and answer, which
// is its own measurement, so usage is reported; with report_usage = false
// it reports unknown usage, never zero.

const NAME = 'node';
const VERSION = require('../package.json').version;

const FAILURE_KINDS = ['auth', 'billing', 'missing_cli', 'model_unavailable', 'invalid_config', 'quota',
  'rate_limit', 'transient', 'timeout', 'aborted', 'unknown'];

const SCENARIOS = ['FAILURE', 'DELAY', 'UNKNOWN_USAGE', 'TOOL_EVENTS', 'LATE_FINAL', 'PANIC'];

// Settlements kept for the Conformance service's Settled call.
const MAX_SETTLEMENTS = 1024;

// Failure is a typed failure; kind is one of FAILURE_KINDS.
class Failure extends Error {
  constructor(kind, message, extra = {}) {
    super(message);
    this.kind = kind;
    this.extra = extra;
  }
}

// wireFailure turns any error into a Failure message: a Failure keeps its
// kind, anything else (a bug, a thrown exception) is unknown.
function wireFailure(err) {
  const f = err instanceof Failure ? err : new Failure('unknown', `node engine: ${err && err.message ? err.message : String(err)}`);
  return {
    kind: 'FAILURE_KIND_' + f.kind.toUpperCase(),
    message: f.message,
    retry_after_ms: f.extra.retryAfterMs || 0,
    provider: f.extra.provider || '',
    model: f.extra.model || '',
  };
}

// sleep waits ms, or rejects with the signal's reason when it aborts.
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) {
      reject(signal.reason);
      return;
    }
    const t = setTimeout(resolve, ms);
    if (signal) {
      signal.addEventListener('abort', () => {
        clearTimeout(t);
        reject(signal.reason);
      }, { once: true });
    }
  });
}

const tokens = (s) => Math.max(1, Math.ceil([...s].length / 4));

function splitText(s, n) {
  const chars = [...s];
  const size = Math.max(1, Math.ceil(chars.length / n));
  const out = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

const textPart = (text, final = false) => ({ kind: 'PART_KIND_TEXT', text, final });

class Engine {
  constructor(log) {
    this.log = log;
    this.config = { answer_prefix: '', report_usage: true };
    this.armed = new Map(); // attempt id -> scenario
    this.settlements = new Map(); // attempt id -> {settled, terminal, done}
    this.modelCalls = 0;
  }

  describe() {
    return {
      name: NAME,
      version: VERSION,
      types: ['PLUGIN_TYPE_ENGINE'],
      capabilities: { admit: true, structured_output: true, tools: false, max_concurrency: 0 },
      failure_kinds: FAILURE_KINDS.map((k) => 'FAILURE_KIND_' + k.toUpperCase()),
    };
  }

  // configure validates the run file's config (JSON bytes) and answers with
  // diagnostics; the previous configuration stays when there are errors.
  configure(raw) {
    const diagnostics = [];
    const error = (summary, attribute = '') =>
      diagnostics.push({ severity: 'SEVERITY_ERROR', summary, detail: '', attribute });
    const defaults = { answer_prefix: '', report_usage: true };
    const text = raw && raw.length ? Buffer.from(raw).toString('utf8').trim() : '';
    let v = null;
    if (text !== '') {
      try {
        v = JSON.parse(text);
      } catch (e) {
        error(`config is not valid JSON: ${e.message}`);
        return { diagnostics };
      }
    }
    if (v === null) {
      this.config = defaults;
      return { diagnostics };
    }
    if (typeof v !== 'object' || Array.isArray(v)) {
      error('node engine config must be an object');
      return { diagnostics };
    }
    for (const [key, value] of Object.entries(v)) {
      if (key === 'answer_prefix' && typeof value !== 'string') error('answer_prefix must be a string', key);
      else if (key === 'report_usage' && typeof value !== 'boolean') error('report_usage must be true or false', key);
      else if (key !== 'answer_prefix' && key !== 'report_usage') error(`unknown node engine setting "${key}"`, key);
    }
    if (diagnostics.length === 0) this.config = { ...defaults, ...v };
    return { diagnostics };
  }

  // admit checks a target statically: it needs a model name.
  admit(target) {
    if (!target || !target.model) {
      throw new Failure('invalid_config', 'the target names no model', { provider: target ? target.provider : '' });
    }
    return { selection: { identity: target } };
  }

  // begin records that the Run of attempt id started and returns the
  // function that records its terminal message.
  begin(id) {
    if (!id) return () => {};
    let resolve;
    const rec = { settled: false, terminal: null, done: new Promise((r) => { resolve = r; }) };
    this.settlements.set(id, rec);
    if (this.settlements.size > MAX_SETTLEMENTS) {
      for (const [old, r] of this.settlements) {
        if (r.settled) {
          this.settlements.delete(old);
          break;
        }
      }
    }
    return (terminal) => {
      rec.settled = true;
      rec.terminal = terminal;
      resolve();
    };
  }

  // run makes one engine call: send(message) streams an event; the
  // returned promise resolves to the terminal message. signal aborts with
  // the Failure that ends the call (aborted when the host cancels, timeout
  // at the attempt's deadline).
  async run(req, send, signal) {
    if (req.workspace_mode === 'read' && (!req.tools || req.tools.length === 0)) {
      throw new Failure('invalid_config', 'workspace_mode "read" needs at least one tool to read the workspace with, and the request names none');
    }
    this.modelCalls++;
    const target = req.target || {};
    const scenario = this.armed.get(req.attempt_id);
    if (scenario) {
      this.armed.delete(req.attempt_id);
      return this.scenario(scenario, req, send, signal);
    }
    const prompt = req.prompt || '';
    const quoted = JSON.stringify([...prompt].length > 200 ? [...prompt].slice(0, 200).join('') + '…' : prompt);
    const answer = `${this.config.answer_prefix}node answer to: ${quoted}`;
    let final;
    if (req.output_schema && req.output_schema.length > 0) {
      final = { kind: 'PART_KIND_STRUCTURED', json: Buffer.from(JSON.stringify({ answer })), final: true };
    } else {
      for (const piece of splitText(answer, 3)) {
        signal.throwIfAborted();
        send({ text: { text: piece } });
      }
      final = textPart(answer, true);
    }
    return this.result(req, [final], prompt, answer, send);
  }

  // result builds the terminal result, sending the usage event first when
  // usage is reported.
  result(req, parts, prompt, answer, send, measured = this.config.report_usage) {
    const usage = measured
      ? { reported: { input: tokens(prompt), output: tokens(answer), cache_read: 0, cache_creation: 0 } }
      : { unknown: {} };
    if (measured) send({ usage });
    const target = req.target || {};
    return { result: { parts, usage, requested: target, effective: target, stop_reason: 'end_turn' } };
  }

  async scenario(s, req, send, signal) {
    const prompt = req.prompt || '';
    switch (s.kind) {
      case 'SCENARIO_KIND_FAILURE': {
        const kind = s.failure_kind.replace(/^FAILURE_KIND_/, '').toLowerCase();
        const target = req.target || {};
        throw new Failure(kind, `node engine scenario ${kind}`, {
          retryAfterMs: kind === 'rate_limit' ? 1000 : 0, provider: target.provider, model: target.model,
        });
      }
      case 'SCENARIO_KIND_DELAY': {
        send({ text: { text: 'waiting' } });
        const ms = Number(s.delay_ms) > 0 ? Number(s.delay_ms) : 60000;
        await sleep(ms, signal);
        const answer = `waited ${ms} ms`;
        send({ text: { text: answer } });
        return this.result(req, [textPart(answer, true)], prompt, answer, send, true);
      }
      case 'SCENARIO_KIND_UNKNOWN_USAGE': {
        const answer = 'usage of this answer was not measured';
        send({ text: { text: answer } });
        return this.result(req, [textPart(answer, true)], prompt, answer, send, false);
      }
      case 'SCENARIO_KIND_TOOL_EVENTS': {
        const use = { id: 'toolu_1', name: 'read_file', json: Buffer.from('{"path":"README.md"}') };
        const res = { id: 'toolu_1', name: 'read_file', json: Buffer.from('{"content":"# README"}') };
        send({ tool_use: use });
        send({ tool_result: res });
        const answer = 'README.md starts with a heading';
        send({ text: { text: answer } });
        return this.result(req, [
          { kind: 'PART_KIND_TOOL_USE', tool_id: use.id, tool_name: use.name, json: use.json },
          { kind: 'PART_KIND_TOOL_RESULT', tool_id: res.id, tool_name: res.name, json: res.json },
          textPart(answer, true),
        ], prompt, answer, send, true);
      }
      case 'SCENARIO_KIND_LATE_FINAL': {
        // The simulated upstream: a delta, a broken connection, then the
        // final answer anyway. An answer that arrived is kept.
        const upstream = [{ delta: 'partial ' }, { error: 'ECONNRESET' }, { final: 'partial answer kept after a transport failure' }];
        let answer = null;
        for (const ev of upstream) {
          if (ev.delta) send({ text: { text: ev.delta } });
          if (ev.error) this.log.warn('upstream transport failure; waiting for a late final answer', { error: ev.error });
          if (ev.final) answer = ev.final;
        }
        return this.result(req, [textPart(answer, true)], prompt, answer, send, true);
      }
      case 'SCENARIO_KIND_PANIC':
        throw new TypeError('node engine scenario: an exception in the Run handler');
      default:
        throw new Failure('invalid_config', `node engine cannot produce scenario ${s.kind}`);
    }
  }

  scenarios() {
    return { kinds: SCENARIOS.map((s) => 'SCENARIO_KIND_' + s) };
  }

  arm(id, scenario) {
    if (!scenario || !SCENARIOS.includes(String(scenario.kind).replace(/^SCENARIO_KIND_/, ''))) {
      throw new Failure('invalid_config', `node engine cannot produce scenario ${scenario && scenario.kind}`);
    }
    this.armed.set(id, scenario);
    return {};
  }

  // settled waits up to waitMs for the Run of attempt id to settle.
  async settled(id, waitMs) {
    const deadline = Date.now() + Math.max(0, waitMs);
    for (;;) {
      const rec = this.settlements.get(id);
      if (rec) {
        if (!rec.settled) await Promise.race([rec.done, sleep(Math.max(0, deadline - Date.now()))]);
        return { started: true, settled: rec.settled, terminal: rec.settled ? rec.terminal : null };
      }
      if (Date.now() >= deadline) return { started: false, settled: false, terminal: null };
      await sleep(Math.min(10, deadline - Date.now()));
    }
  }
}

module.exports = { Engine, Failure, wireFailure };
