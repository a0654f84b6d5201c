'use strict';
// The protocol files the plugin parses at start, under plugin/proto in the
// repository (plugin/proto/README.md says where each comes from):
//   obversa/plugin/v1/plugin.proto   Engine, Conformance and their messages
//   grpc/health/v1/health.proto      the standard health service; the host
//                                    calls Check("plugin") and needs SERVING
//   goplugin/grpc_controller.proto   go-plugin's controller; Shutdown is the
//                                    host's graceful stop
//   google/rpc/status.proto          the grpc-status-details-bin trailer that
//                                    carries a typed Failure on unary calls
// The launcher checks each file against its pinned digest and passes the
// checked text in; build.js pins the same list.

const fs = require('fs');
const path = require('path');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

const PROTOS = [
  'obversa/plugin/v1/plugin.proto',
  'grpc/health/v1/health.proto',
  'goplugin/grpc_controller.proto',
  'google/rpc/status.proto',
];

// PROTO_DIR is plugin/proto when the plugin runs from the repository
// without its launcher (node src/main.js).
const PROTO_DIR = path.join(__dirname, '..', '..', '..', '..', 'plugin', 'proto');

// loadProtocol parses the protocol files (texts maps each name in PROTOS to
// its content; absent = read from PROTO_DIR) into one root and returns
// {definition, types}: the service definitions for grpc-js and the message
// types the plugin encodes itself. An import that is neither one of the
// files nor a protobuf well-known type is an error.
function loadProtocol(texts) {
  const root = new protobuf.Root();
  const wanted = new Set();
  for (const name of PROTOS) {
    const text = texts ? texts[name] : fs.readFileSync(path.join(PROTO_DIR, name), 'utf8');
    if (typeof text !== 'string') throw new Error(`protocol file ${name} was not given`);
    const parsed = protobuf.parse(text, root, { keepCase: true });
    for (const imp of parsed.imports || []) wanted.add(imp);
  }
  for (const imp of wanted) {
    if (PROTOS.includes(imp)) continue;
    const wellKnown = protobuf.common.get(imp);
    if (!wellKnown) throw new Error(`protocol file imports ${imp}, which is neither a vendored file nor a well-known type`);
    root.addJSON(wellKnown.nested);
  }
  root.resolveAll();
  const definition = protoLoader.fromJSON(root.toJSON(), {
    keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
  });
  return {
    definition,
    types: {
      Failure: root.lookupType('obversa.plugin.v1.Failure'),
      Status: root.lookupType('google.rpc.Status'),
    },
  };
}

module.exports = { PROTOS, loadProtocol };
