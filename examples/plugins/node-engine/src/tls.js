'use strict';
// Automatic mTLS as go-plugin does it. When the host offers a client
// certificate (PLUGIN_CLIENT_CERT, PEM), the plugin makes a self-signed
// certificate of its own for "localhost", serves TLS with it, requires the
// host's certificate from every client, and prints its certificate (DER,
// base64 without padding) as the handshake line's sixth field. Node can
// sign but not build certificates, so the certificate's DER is written out
// here: a P-256 key, ECDSA with SHA-256, valid for 30 days.

const crypto = require('crypto');

function length(n) {
  if (n < 0x80) return Buffer.from([n]);
  const bytes = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

// tlv encodes one DER element.
function tlv(tag, ...contents) {
  const body = Buffer.concat(contents);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const seq = (...c) => tlv(0x30, ...c);
const set = (...c) => tlv(0x31, ...c);
const explicit = (n, c) => tlv(0xa0 + n, c);
const bool = (v) => tlv(0x01, Buffer.from([v ? 0xff : 0x00]));
const octets = (b) => tlv(0x04, b);
const utf8 = (s) => tlv(0x0c, Buffer.from(s, 'utf8'));
const bits = (b, unused = 0) => tlv(0x03, Buffer.from([unused]), b);

// integer encodes a non-negative integer given as big-endian bytes.
function integer(b) {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  b = b.subarray(i);
  if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

function oid(dotted) {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [40 * a + b];
  for (let v of rest) {
    const chunk = [v & 0x7f];
    for (v = Math.floor(v / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

// utcTime encodes a date before 2050 as UTCTime.
function utcTime(d) {
  const p = (n) => String(n).padStart(2, '0');
  return tlv(0x17, Buffer.from(
    p(d.getUTCFullYear() % 100) + p(d.getUTCMonth() + 1) + p(d.getUTCDate()) +
    p(d.getUTCHours()) + p(d.getUTCMinutes()) + p(d.getUTCSeconds()) + 'Z'));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

// serverCertificate returns {certPem, keyPem, der} for a fresh
// self-signed certificate valid for localhost, usable as its own CA.
function serverCertificate() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const name = seq(
    set(seq(oid('2.5.4.10'), utf8('Obversa node-engine'))),
    set(seq(oid('2.5.4.3'), utf8('localhost'))));
  const now = Date.now();
  const extensions = seq(
    // basicConstraints, critical: CA (go-plugin's certificates are too)
    seq(oid('2.5.29.19'), bool(true), octets(seq(bool(true)))),
    // keyUsage, critical: digitalSignature, keyEncipherment, keyCertSign
    seq(oid('2.5.29.15'), bool(true), octets(bits(Buffer.from([0xa4]), 2))),
    // extKeyUsage: serverAuth, clientAuth
    seq(oid('2.5.29.37'), octets(seq(oid('1.3.6.1.5.5.7.3.1'), oid('1.3.6.1.5.5.7.3.2')))),
    // subjectAltName: dNSName localhost
    seq(oid('2.5.29.17'), octets(seq(tlv(0x82, Buffer.from('localhost'))))));
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))), // version 3
    integer(crypto.randomBytes(16)),
    ECDSA_SHA256,
    name,
    seq(utcTime(new Date(now - 60e3)), utcTime(new Date(now + 30 * 24 * 3600e3))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, extensions));
  const signature = crypto.sign('sha256', tbs, privateKey); // DER ECDSA-Sig-Value
  const der = seq(tbs, ECDSA_SHA256, bits(signature));
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return {
    der,
    certPem: `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`.replace('\n\n', '\n'),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }),
  };
}

module.exports = { serverCertificate };
