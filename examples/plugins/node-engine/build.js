'use strict';
// build.js writes the node-engine launcher, the one executable a run file
// names and pins (see launcher.js for what it checks):
//
//   npm ci --ignore-scripts && node build.js [OUT]
//
// OUT defaults to bin/node-engine at the repository root. The launcher
// names this directory and this machine's node by absolute path, so build
// it where it runs, then pin it (obversa plugin lock). Rebuild and re-pin
// after any change to the code, the dependencies or the protocol files.

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

const ROOT = __dirname;
const REPO = path.resolve(ROOT, '..', '..', '..');
// The protocol files the plugin parses at start (src/protocol.js lists
// them), under plugin/proto.
const PROTO_DIR = path.join(REPO, 'plugin', 'proto');
const { PROTOS } = require('./src/protocol');
const NODE_MAJOR = 20;

function sha256(file) {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

// walk adds every regular file under dir (symlinks skipped) to manifest,
// keyed by its path relative to ROOT with '/' separators.
function walk(dir, manifest) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== '.bin') walk(full, manifest);
    } else if (entry.isFile() && entry.name !== '.package-lock.json') {
      manifest[path.relative(ROOT, full).split(path.sep).join('/')] = sha256(full);
    }
  }
}

function build(out) {
  if (!fs.existsSync(path.join(ROOT, 'node_modules'))) {
    throw new Error(`${ROOT}/node_modules is missing: run "npm ci --ignore-scripts" there first`);
  }
  const manifest = {};
  walk(path.join(ROOT, 'src'), manifest);
  walk(path.join(ROOT, 'node_modules'), manifest);
  manifest['package.json'] = sha256(path.join(ROOT, 'package.json'));
  for (const p of PROTOS) manifest[path.join(PROTO_DIR, p)] = sha256(path.join(PROTO_DIR, p));
  const sorted = Object.fromEntries(Object.keys(manifest).sort().map((k) => [k, manifest[k]]));
  const text = [
    `#!${process.execPath}`,
    '// The node-engine launcher, written by examples/plugins/node-engine/build.js; do not edit.',
    "'use strict';",
    `const ROOT = ${JSON.stringify(ROOT)};`,
    `const PROTO_DIR = ${JSON.stringify(PROTO_DIR)};`,
    `const PROTOS = ${JSON.stringify(PROTOS)};`,
    `const NODE_MAJOR = ${NODE_MAJOR};`,
    `const MANIFEST = ${JSON.stringify(sorted, null, 1)};`,
    fs.readFileSync(path.join(ROOT, 'launcher.js'), 'utf8'),
  ].join('\n');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const tmp = `${out}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text, { mode: 0o755 });
  fs.renameSync(tmp, out);
  return { files: Object.keys(sorted).length, sha256: sha256(out) };
}

if (require.main === module) {
  const out = path.resolve(process.argv[2] || path.join(REPO, 'bin', 'node-engine'));
  try {
    const { files, sha256: sum } = build(out);
    process.stdout.write(`wrote ${out}\nsha256 ${sum}, covering ${files} files\n`);
  } catch (e) {
    process.stderr.write(`build: ${e.message}\n`);
    process.exit(1);
  }
}

module.exports = { build };
