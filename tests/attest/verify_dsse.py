#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Verifies a DSSE envelope with code that is not sealrun's.

Usage: verify_dsse.py ENVELOPE PUBLIC_KEY_PEM EXPECTED_PAYLOAD_TYPE
                      [--write-pae FILE] [--write-sig FILE] [--write-payload FILE]

The envelope is read with Python's json and base64 modules and the PAE is built here from the
DSSE protocol text (github.com/secure-systems-lab/dsse, protocol.md). Debian 12's
python3-securesystemslib (0.26) has no DSSE Envelope class, so the signature is checked twice by
libraries that do not share sealrun's code: securesystemslib's SSlibKey (Ed25519 through PyNaCl /
libsodium) and python3-cryptography's Ed25519PublicKey. The key id is recomputed as the SHA-256 of
the public key's DER SubjectPublicKeyInfo. --write-pae/--write-sig leave the PAE bytes and the raw
signature for `openssl pkeyutl -verify -rawin`.

Exit 0 when everything verifies; 1 with a message on stderr otherwise.
"""
import base64
import binascii
import hashlib
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from securesystemslib.signer import Signature, SSlibKey


def fail(message):
    print(f"verify_dsse: {message}", file=sys.stderr)
    sys.exit(1)


def b64decode(text, what):
    # DSSE: verifiers MUST accept the standard and the URL-safe alphabet.
    padded = text + "=" * (-len(text) % 4)
    try:
        if "-" in text or "_" in text:
            return base64.urlsafe_b64decode(padded.encode("ascii"))
        return base64.b64decode(padded.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as e:
        fail(f"{what}: bad base64: {e}")


def pae(payload_type, payload):
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def main(argv):
    if len(argv) < 4:
        fail(__doc__)
    envelope_path, key_path, expected_type = argv[1:4]
    extra = dict(zip(argv[4::2], argv[5::2]))
    with open(envelope_path, "rb") as f:
        envelope = json.load(f)
    payload_type = envelope["payloadType"]
    payload = b64decode(envelope["payload"], "payload")
    signatures = envelope["signatures"]
    if len(signatures) != 1:
        fail(f"expected exactly one signature, found {len(signatures)}")
    sig = b64decode(signatures[0]["sig"], "sig")

    with open(key_path, "rb") as f:
        public = serialization.load_pem_public_key(f.read())
    if not isinstance(public, Ed25519PublicKey):
        fail("the public key is not Ed25519")
    der = public.public_bytes(serialization.Encoding.DER,
                              serialization.PublicFormat.SubjectPublicKeyInfo)
    key_id = hashlib.sha256(der).hexdigest()
    if signatures[0].get("keyid", key_id) != key_id:
        fail(f"keyid {signatures[0]['keyid']} is not the key's id {key_id}")
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    message = pae(payload_type, payload)
    sslib_key = SSlibKey(key_id, "ed25519", "ed25519", {"public": raw.hex()})
    try:
        sslib_key.verify_signature(Signature(key_id, sig.hex()), message)
    except Exception as e:  # securesystemslib raises its own exception types
        fail(f"securesystemslib: {type(e).__name__}: {e}")
    try:
        public.verify(sig, message)
    except InvalidSignature:
        fail("python3-cryptography: the signature does not verify")
    if payload_type != expected_type:
        fail(f"payloadType {payload_type!r}, expected {expected_type!r}")

    for option, data in (("--write-pae", message), ("--write-sig", sig),
                         ("--write-payload", payload)):
        if option in extra:
            with open(extra[option], "wb") as f:
                f.write(data)
    print(f"verified: keyid {key_id}, payload sha256 {hashlib.sha256(payload).hexdigest()}")


if __name__ == "__main__":
    main(sys.argv)
