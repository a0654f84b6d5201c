'use strict';
// An Obversa engine plugin in JavaScript: the go-plugin handshake, the
// gRPC services, health, the controller's shutdown and automatic mTLS,
// written against the wire protocol alone (docs/writing-plugins.md).
//
// It is started through its launcher (build.js writes it), which verifies
// every file it loads against the digests the launcher carries and passes
// in the verified text of the protocol files (src/protocol.js). Run
// directly (node src/main.js) it reads them from the repository instead.

const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const util = require('util');
const grpc = require('@grpc/grpc-js');

const { loadProtocol } = require('./protocol');
const { Engine, Failure, wireFailure } = require('./engine');
const { logger } = require('./log');
const { serverCertificate } = require('./tls');

// The host's magic cookie (plugin.Handshake): it only tells the program
// that the Obversa host started it.
const COOKIE_KEY = 'OBVERSA_PLUGIN_MAGIC_COOKIE';
const COOKIE_VALUE = '9b21c5bb0baf13972267b38f0da838c1fac3c57abfc5960e414c94d616c5fa9f';

// go-plugin's core protocol version, and the application protocol
// versions (plugin.ProtocolVersion) this plugin speaks.
const CORE_PROTOCOL_VERSION = 1;
const PROTOCOL_VERSIONS = [1];

// Messages up to 64 MiB in both directions (plugin.MaxMessageBytes).
const MAX_MESSAGE_BYTES = 64 << 20;

const log = logger('node-engine');

// refuse explains on stderr why the plugin will not start and exits 1.
function refuse(message) {
  process.stderr.write(message + '\n');
  process.exit(1);
}

// negotiate picks the highest protocol version both the host (offered,
// "1,2") and this plugin speak, or null.
function negotiate(offered) {
  const versions = String(offered || '1').split(',').map((s) => Number(s.trim())).filter(Number.isInteger);
  const common = versions.filter((v) => PROTOCOL_VERSIONS.includes(v));
  return common.length ? Math.max(...common) : null;
}

// gRPC codes a typed failure travels with on a unary call; only the
// Failure detail is authoritative.
const FAILURE_CODES = {
  auth: grpc.status.UNAUTHENTICATED, billing: grpc.status.FAILED_PRECONDITION,
  missing_cli: grpc.status.FAILED_PRECONDITION, model_unavailable: grpc.status.NOT_FOUND,
  invalid_config: grpc.status.INVALID_ARGUMENT, quota: grpc.status.RESOURCE_EXHAUSTED,
  rate_limit: grpc.status.RESOURCE_EXHAUSTED, transient: grpc.status.UNAVAILABLE,
  timeout: grpc.status.DEADLINE_EXCEEDED, aborted: grpc.status.ABORTED, unknown: grpc.status.UNKNOWN,
};

function main(opts = {}) {
  if (process.env[COOKIE_KEY] !== COOKIE_VALUE) {
    refuse('This program is an Obversa engine plugin: the Obversa host starts it (obversa run) and talks to it over gRPC.\n' +
      'It is not meant to be run by hand.');
  }
  const version = negotiate(process.env.PLUGIN_PROTOCOL_VERSIONS);
  if (version === null) {
    refuse(`node-engine speaks plugin protocol versions ${PROTOCOL_VERSIONS.join(',')}; ` +
      `the host offered ${process.env.PLUGIN_PROTOCOL_VERSIONS}`);
  }
  // Standard output carries the handshake line and nothing else.
  console.log = console.info = (...args) => log.info(util.format(...args));

  const { definition, types } = loadProtocol(opts.protoTexts);
  const engine = new Engine(log);

  // failureStatus is the gRPC error of a unary call that failed: the
  // Failure travels in a google.rpc.Status detail.
  const failureStatus = (err) => {
    const f = wireFailure(err);
    const kind = f.kind.replace(/^FAILURE_KIND_/, '').toLowerCase();
    const code = FAILURE_CODES[kind] ?? grpc.status.UNKNOWN;
    const detail = types.Failure.encode(types.Failure.fromObject(f)).finish();
    const st = types.Status.encode(types.Status.fromObject({
      code, message: `${kind}: ${f.message}`,
      details: [{ type_url: 'type.googleapis.com/obversa.plugin.v1.Failure', value: detail }],
    })).finish();
    const metadata = new grpc.Metadata();
    metadata.set('grpc-status-details-bin', Buffer.from(st));
    return { code, details: `${kind}: ${f.message}`, metadata };
  };
  // unary wraps a handler: a thrown error becomes a typed failure.
  const unary = (fn) => (call, callback) => {
    Promise.resolve().then(() => fn(call.request)).then(
      (resp) => callback(null, resp),
      (err) => {
        if (!(err instanceof Failure)) log.error('handler failed', { error: err, stack: err && err.stack });
        callback(failureStatus(err));
      });
  };

  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  server.addService(definition['obversa.plugin.v1.Engine'], {
    Describe: unary(() => engine.describe()),
    Configure: unary((req) => engine.configure(req.config_json)),
    Admit: unary((req) => engine.admit(req.target)),
    Run: (call) => {
      const req = call.request;
      const abort = new AbortController();
      call.on('cancelled', () => abort.abort(new Failure('aborted', 'the host cancelled the call')));
      const timer = req.timeout_ms > 0
        ? setTimeout(() => abort.abort(new Failure('timeout', `deadline of ${req.timeout_ms} ms exceeded`)), req.timeout_ms)
        : null;
      const settle = engine.begin(req.attempt_id);
      const send = (m) => {
        if (!call.cancelled) call.write(m);
      };
      Promise.resolve().then(() => engine.run(req, send, abort.signal)).then(
        (terminal) => terminal,
        (err) => {
          if (!(err instanceof Failure)) log.error('Run handler failed', { error: err, stack: err && err.stack });
          return { failure: wireFailure(err) };
        },
      ).then((terminal) => {
        if (timer) clearTimeout(timer);
        settle(terminal);
        if (!call.cancelled) {
          call.write(terminal);
          call.end();
        }
      });
    },
  });
  server.addService(definition['obversa.plugin.v1.Conformance'], {
    Scenarios: unary(() => engine.scenarios()),
    Arm: unary((req) => engine.arm(req.attempt_id, req.scenario)),
    Settled: unary((req) => engine.settled(req.attempt_id, req.wait_ms)),
    ModelCalls: unary(() => ({ count: engine.modelCalls })),
  });
  server.addService(definition['grpc.health.v1.Health'], {
    Check: (call, callback) => {
      const service = call.request.service;
      if (service === 'plugin' || service === '') callback(null, { status: 'SERVING' });
      else callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${service}` });
    },
    Watch: (call) => call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'Watch is not implemented' }),
  });

  const { socket, cleanup } = socketPath();
  process.on('exit', cleanup);
  const stop = (why) => {
    log.info('shutting down', { reason: why });
    server.forceShutdown();
    process.exit(0);
  };
  server.addService(definition['plugin.GRPCController'], {
    Shutdown: (call, callback) => {
      callback(null, {});
      setImmediate(() => stop('the host asked through the controller'));
    },
  });
  // The host handles Ctrl-C; go-plugin plugins ignore interrupts.
  process.on('SIGINT', () => log.debug('interrupt ignored'));
  process.on('SIGTERM', () => stop('SIGTERM'));

  let credentials = grpc.ServerCredentials.createInsecure();
  let certField = '';
  const clientCert = process.env.PLUGIN_CLIENT_CERT;
  if (clientCert) {
    const cert = serverCertificate();
    credentials = grpc.ServerCredentials.createSsl(Buffer.from(clientCert),
      [{ private_key: Buffer.from(cert.keyPem), cert_chain: Buffer.from(cert.certPem) }], true);
    certField = cert.der.toString('base64').replace(/=+$/, '');
  }
  server.bindAsync(`unix://${socket}`, credentials, (err) => {
    if (err) {
      log.error('listening failed', { error: err, socket });
      process.exit(1);
    }
    log.debug('plugin address', { network: 'unix', address: socket });
    process.stdout.write(`${CORE_PROTOCOL_VERSION}|${version}|unix|${socket}|grpc|${certField}\n`);
  });
}

// socketPath returns the path to listen on and a function that removes
// what the plugin made for it. The host gives the plugin a directory of its
// own (PLUGIN_UNIX_SOCKET_DIR), which it removes when the plugin ends however
// it ends: the socket gets a fresh name there, as go-plugin's does. Run
// without a host, the plugin makes a directory under the temporary
// directory and removes it at exit.
function socketPath() {
  const given = process.env.PLUGIN_UNIX_SOCKET_DIR;
  if (!given) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plugin-'));
    return { socket: path.join(dir, 'plugin.sock'), cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
  }
  const socket = path.join(given, `plugin${crypto.randomBytes(8).toString('hex')}`);
  return { socket, cleanup: () => fs.rmSync(socket, { force: true }) };
}

module.exports = { main, negotiate };

if (require.main === module) main();
