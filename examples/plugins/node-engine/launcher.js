// The body of the node-engine launcher. build.js writes the launcher: a
// "#!" line naming this machine's node, the constants ROOT (this
// directory), PROTO_DIR (plugin/proto) and PROTOS (the protocol files under
// it), NODE_MAJOR and MANIFEST (the SHA-256 of every file under src/,
// node_modules/ and package.json, and of the protocol files), then this
// text. The launcher is the one executable a run
// pins, so its digest covers all the code the plugin runs: before anything
// is loaded it checks the package manifests, and every JavaScript or JSON
// file node loads afterwards is read once, checked against MANIFEST and
// compiled from the bytes that were checked. A file that changed, or one
// the launcher was not built with, stops the plugin before its handshake.
// ES modules are not hooked: the checked code imports none, and making it
// import one changes its digest. Node reads NODE_OPTIONS before any of this
// runs, so the launcher refuses to serve when it is set.
/* global ROOT, PROTO_DIR, PROTOS, NODE_MAJOR, MANIFEST */

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const Module = require('module');

function refuse(message) {
  const stamp = new Date().toISOString().slice(0, 23) + '000Z';
  process.stderr.write(JSON.stringify({ '@level': 'error', '@message': `node-engine launcher: ${message}`, '@timestamp': stamp }) + '\n');
  process.exit(1);
}

if (Number(process.versions.node.split('.')[0]) < NODE_MAJOR) {
  refuse(`node ${process.versions.node} is too old; the plugin needs node ${NODE_MAJOR} or later`);
}

if (process.env.NODE_OPTIONS) {
  refuse('NODE_OPTIONS is set; it can make node load code this launcher does not check');
}

// verifiedRead returns the content of file after checking it against
// MANIFEST; any difference ends the process.
function verifiedRead(file) {
  let real;
  try {
    real = fs.realpathSync(file);
  } catch (e) {
    refuse(`${file}: ${e.message}`);
  }
  const rel = path.relative(ROOT, real);
  const key = rel.startsWith('..') || path.isAbsolute(rel) ? real : rel.split(path.sep).join('/');
  const want = MANIFEST[key];
  if (want === undefined) {
    refuse(`${real} is not one of the files this launcher was built with; rebuild the launcher (npm run build) and pin it again`);
  }
  const data = fs.readFileSync(real);
  const got = crypto.createHash('sha256').update(data).digest('hex');
  if (got !== want) {
    refuse(`${real} changed after this launcher was built (sha256 ${got}, the launcher pins ${want}); rebuild the launcher (npm run build) and pin it again`);
  }
  return data;
}

// Package manifests steer module resolution; check them all first.
for (const key of Object.keys(MANIFEST)) {
  if (path.basename(key) === 'package.json') verifiedRead(path.isAbsolute(key) ? key : path.join(ROOT, key));
}

const stripBOM = (s) => (s.charCodeAt(0) === 0xfeff ? s.slice(1) : s);
Module._extensions['.js'] = (module, filename) => {
  module._compile(stripBOM(verifiedRead(filename).toString('utf8')), filename);
};
Module._extensions['.json'] = (module, filename) => {
  const text = stripBOM(verifiedRead(filename).toString('utf8'));
  try {
    module.exports = JSON.parse(text);
  } catch (e) {
    e.message = `${filename}: ${e.message}`;
    throw e;
  }
};
Module._extensions['.node'] = (module, filename) => refuse(`native addon ${filename} is not allowed`);

const protoTexts = {};
for (const p of PROTOS) protoTexts[p] = verifiedRead(path.join(PROTO_DIR, p)).toString('utf8');
require(path.join(ROOT, 'src', 'main.js')).main({ protoTexts });
