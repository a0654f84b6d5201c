"""Automatic mTLS as go-plugin does it.

When the host offers a client certificate (PLUGIN_CLIENT_CERT, PEM), the
plugin makes a self-signed certificate of its own for "localhost", serves
TLS with it, requires the host's certificate from every client, and prints
its certificate (DER, base64 without padding) as the handshake line's sixth
field.

Python's standard library can neither sign nor build certificates, and the
plugin uses no package beyond grpcio and protobuf, so both are done here: a
P-256 key, ECDSA with SHA-256 (FIPS 186-4 section 6.4, SEC 1 section 4.1.3),
and the certificate's DER (RFC 5280), valid for 30 days. The key never
leaves the process; the nonce of the one signature comes from the secrets
module.
"""

import base64
import hashlib
import secrets
import time

# NIST P-256 (SEC 2 section 2.4.2): y^2 = x^3 - 3x + b over GF(P).
P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)


def _add(p1, p2):
    """Adds two affine points; None is the point at infinity."""
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    (x1, y1), (x2, y2) = p1, p2
    if x1 == x2:
        if (y1 + y2) % P == 0:
            return None
        slope = (3 * x1 * x1 - 3) * pow(2 * y1, -1, P) % P
    else:
        slope = (y2 - y1) * pow(x2 - x1, -1, P) % P
    x3 = (slope * slope - x1 - x2) % P
    return x3, (slope * (x1 - x3) - y1) % P


def _mul(k, point):
    """Multiplies point by the scalar k (double and add)."""
    result = None
    while k:
        if k & 1:
            result = _add(result, point)
        point = _add(point, point)
        k >>= 1
    return result


def _sign(message, d):
    """Returns the ECDSA-SHA256 signature (r, s) of message under key d."""
    e = int.from_bytes(hashlib.sha256(message).digest(), "big")
    while True:
        k = secrets.randbelow(N - 1) + 1
        r = _mul(k, G)[0] % N
        s = pow(k, -1, N) * (e + r * d) % N
        if r and s:
            return r, s


# DER (X.690): tag, length, contents.
def _tlv(tag, *contents):
    body = b"".join(contents)
    n = len(body)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + length + body


def _seq(*c):
    return _tlv(0x30, *c)


def _set(*c):
    return _tlv(0x31, *c)


def _integer(v):
    raw = v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big")  # room for the sign bit
    return _tlv(0x02, raw)


def _oid(dotted):
    parts = [int(x) for x in dotted.split(".")]
    out = [40 * parts[0] + parts[1]]
    for v in parts[2:]:
        chunk = [v & 0x7F]
        v >>= 7
        while v:
            chunk.insert(0, (v & 0x7F) | 0x80)
            v >>= 7
        out.extend(chunk)
    return _tlv(0x06, bytes(out))


def _bits(data, unused=0):
    return _tlv(0x03, bytes([unused]), data)


def _utc_time(t):
    return _tlv(0x17, time.strftime("%y%m%d%H%M%SZ", time.gmtime(t)).encode())


_ECDSA_SHA256 = _seq(_oid("1.2.840.10045.4.3.2"))
_P256 = _oid("1.2.840.10045.3.1.7")


def _pem(label, der):
    b64 = base64.b64encode(der).decode()
    lines = [b64[i:i + 64] for i in range(0, len(b64), 64)]
    return ("-----BEGIN %s-----\n%s\n-----END %s-----\n" % (label, "\n".join(lines), label)).encode()


class Certificate:
    """A fresh self-signed certificate for localhost, usable as its own CA.

    der is the certificate (DER), cert_pem and key_pem the certificate and
    its SEC 1 private key in PEM, as grpc.ssl_server_credentials takes them.
    """

    def __init__(self, now=None):
        now = time.time() if now is None else now
        d = secrets.randbelow(N - 1) + 1
        qx, qy = _mul(d, G)
        point = b"\x04" + qx.to_bytes(32, "big") + qy.to_bytes(32, "big")
        spki = _seq(_seq(_oid("1.2.840.10045.2.1"), _P256), _bits(point))
        name = _seq(
            _set(_seq(_oid("2.5.4.10"), _tlv(0x0C, b"Obversa python-engine"))),
            _set(_seq(_oid("2.5.4.3"), _tlv(0x0C, b"localhost"))),
        )
        extensions = _seq(
            # basicConstraints, critical: CA (go-plugin's certificates are too)
            _seq(_oid("2.5.29.19"), _tlv(0x01, b"\xff"), _tlv(0x04, _seq(_tlv(0x01, b"\xff")))),
            # keyUsage, critical: digitalSignature, keyEncipherment, keyCertSign
            _seq(_oid("2.5.29.15"), _tlv(0x01, b"\xff"), _tlv(0x04, _bits(b"\xa4", 2))),
            # extKeyUsage: serverAuth, clientAuth
            _seq(_oid("2.5.29.37"), _tlv(0x04, _seq(_oid("1.3.6.1.5.5.7.3.1"), _oid("1.3.6.1.5.5.7.3.2")))),
            # subjectAltName: dNSName localhost
            _seq(_oid("2.5.29.17"), _tlv(0x04, _seq(_tlv(0x82, b"localhost")))),
        )
        tbs = _seq(
            _tlv(0xA0, _integer(2)),  # version 3
            _integer(int.from_bytes(secrets.token_bytes(16), "big") >> 1),
            _ECDSA_SHA256,
            name,
            _seq(_utc_time(now - 60), _utc_time(now + 30 * 24 * 3600)),
            name,
            spki,
            _tlv(0xA3, extensions),
        )
        r, s = _sign(tbs, d)
        self.der = _seq(tbs, _ECDSA_SHA256, _bits(_seq(_integer(r), _integer(s))))
        key = _seq(_integer(1), _tlv(0x04, d.to_bytes(32, "big")), _tlv(0xA0, _P256), _tlv(0xA1, _bits(point)))
        self.cert_pem = _pem("CERTIFICATE", self.der)
        self.key_pem = _pem("EC PRIVATE KEY", key)

    def handshake_field(self):
        """The certificate as the handshake line carries it: base64, no padding."""
        return base64.b64encode(self.der).decode().rstrip("=")
