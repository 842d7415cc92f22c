#!/usr/bin/env python3
"""cosign_check.py - an independent verifier for cosign-format signatures and
attestations, used as a test peer for paddle-image.

Written only from published format facts (sigstore/cosign, sigstore/sigstore,
containers/image, secure-systems-lab DSSE, in-toto attestation v1, SLSA
provenance v1, SPDX 2.3, CycloneDX 1.5, OCI image-spec / distribution-spec) as
summarised in shared/reference/signing-formats.md. It deliberately shares no
code with the C++ implementation it checks.

Subcommands (exit 0 = ok, 1 = verification failure with one "FAIL: <reason>"
line on stderr, 2 = usage error, 3 = internal error of this script):

  verify    --key PUB.pem (--layout DIR --tag TAG |
                           --registry URL --repo REPO --ref TAG_OR_DIGEST)
            [--identity REGISTRY/REPO:TAG] [--attestations slsa,spdx,cyclonedx]
  genkey    --out PREFIX [--pem-type sigstore|cosign] [--scrypt-n N]
  decrypt   --key FILE
  sign-blob --key FILE --in PAYLOAD
  verify-blob --key PUB.pem --signature SIGFILE --in FILE
  verify-blob-attestation --key PUB.pem --signature ATT --in FILE [--type T]
            (cosign verify-blob-attestation: ATT holds DSSE envelopes of in-toto
            Statements v1, one per line; one must be signed by the key, be of type T
            (slsaprovenance1, spdxjson, cyclonedx or a URI; any if not given) and
            name FILE's sha256 among its subjects; SLSA and SPDX predicates are
            validated against their schemas)
  schema    --kind spdx|cyclonedx|slsa|intoto [--schema-file PATH] FILE
  selftest

The password for genkey/decrypt/sign-blob comes from $COSIGN_PASSWORD (unset
is treated as the empty password).

Dependencies: stdlib + python3-cryptography + python3-nacl + python3-jsonschema.
"""

import os
import sys


def _reexec_with_system_python():
    """If the interpreter found by `env python3` lacks the Debian packages
    (e.g. a pyenv shim first on PATH), re-run this script with /usr/bin/python3,
    which is where apt installs python3-cryptography/-nacl/-jsonschema."""
    try:
        import cryptography  # noqa: F401
        import jsonschema  # noqa: F401
        import nacl  # noqa: F401
        return
    except ImportError as exc:
        system_python = "/usr/bin/python3"
        if (os.environ.get("COSIGN_CHECK_REEXEC") != "1"
                and os.path.exists(system_python)
                and os.path.realpath(sys.executable) != os.path.realpath(system_python)):
            os.environ["COSIGN_CHECK_REEXEC"] = "1"
            os.execv(system_python, [system_python, os.path.abspath(__file__)] + sys.argv[1:])
        sys.stderr.write("cosign_check.py: missing dependency (%s); run: apt-get install -y "
                         "python3-cryptography python3-nacl python3-jsonschema\n" % exc)
        sys.exit(2)


_reexec_with_system_python()

# pylint: disable=wrong-import-position
import argparse
import base64
import binascii
import hashlib
import json
import posixpath
import re
import shutil
import subprocess
import tempfile
import threading
import traceback
import urllib.error
import urllib.parse
import urllib.request
import warnings

import jsonschema
import nacl.exceptions
import nacl.secret
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

# ---------------------------------------------------------------------------
# Constants (each with the spec it comes from)
# ---------------------------------------------------------------------------

# OCI image-spec media types.
MT_OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_OCI_INDEX = "application/vnd.oci.image.index.v1+json"
MT_OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MT_DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_ACCEPT = ", ".join([MT_OCI_MANIFEST, MT_OCI_INDEX, MT_DOCKER_MANIFEST, MT_DOCKER_LIST])
# OCI image-spec image-layout: tag annotation in index.json.
ANN_REF_NAME = "org.opencontainers.image.ref.name"

# cosign: simple-signing layer of the `.sig` tag and its signature annotation.
MT_SIMPLESIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
ANN_COSIGN_SIGNATURE = "dev.cosignproject.cosign/signature"
# containers/image + cosign: the critical.type value.
SIMPLESIGNING_TYPE = "cosign container image signature"

# cosign: DSSE layer of the `.att` tag and its predicate annotation.
MT_DSSE = "application/vnd.dsse.envelope.v1+json"
ANN_PREDICATE_TYPE = "predicateType"
# DSSE + in-toto: payload type, statement type.
DSSE_PAYLOAD_TYPE_INTOTO = "application/vnd.in-toto+json"
INTOTO_STATEMENT_V1 = "https://in-toto.io/Statement/v1"

# cosign predicate URIs for the attestation kinds we can be asked for.
PREDICATE_TYPES = {
    "slsa": "https://slsa.dev/provenance/v1",
    "spdx": "https://spdx.dev/Document",
    "cyclonedx": "https://cyclonedx.org/bom",
}

# cosign / sigstore encrypted private key PEM types (sigstore/sigstore cryptoutils).
PEM_TYPE_SIGSTORE = "ENCRYPTED SIGSTORE PRIVATE KEY"
PEM_TYPE_COSIGN = "ENCRYPTED COSIGN PRIVATE KEY"
ENCRYPTED_PEM_TYPES = (PEM_TYPE_SIGSTORE, PEM_TYPE_COSIGN)
SCRYPT_MAXMEM = 256 * 1024 * 1024

SHA256_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
ANY_DIGEST_RE = re.compile(r"^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$")  # OCI descriptor grammar


# ---------------------------------------------------------------------------
# Errors and small helpers
# ---------------------------------------------------------------------------

class Fail(Exception):
    """A verification failure: exit 1 with `FAIL: <reason>`."""


class Usage(Exception):
    """A usage error: exit 2."""


def sha256_digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def b64_std_decode(value, what):
    """Standard base64 with padding (cosign/DSSE writers use StdEncoding)."""
    if not isinstance(value, str):
        raise Fail("%s: expected a base64 string, got %s" % (what, type(value).__name__))
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise Fail("%s: not standard base64 (%s)" % (what, exc)) from None


def _no_duplicate_keys(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError("duplicate key %r" % key)
        obj[key] = value
    return obj


def _reject_constant(name):
    raise ValueError("non-JSON constant %s" % name)


def strict_json(data, what):
    """Parse JSON as UTF-8, rejecting duplicate keys and NaN/Infinity
    (containers/image uses a paranoid parser that rejects duplicates)."""
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Fail("%s: invalid JSON (%s)" % (what, exc)) from None


def exact_keys(obj, keys, what):
    """containers/image ParanoidUnmarshalJSONObjectExactFields: an object
    with exactly these keys, no more, no fewer."""
    if not isinstance(obj, dict):
        raise Fail("%s: expected a JSON object" % what)
    got = set(obj)
    want = set(keys)
    if got != want:
        missing = sorted(want - got)
        extra = sorted(got - want)
        raise Fail("%s: keys must be exactly %s (missing %s, unexpected %s)"
                   % (what, sorted(want), missing, extra))


def check_descriptor(desc, what):
    """OCI image-spec descriptor: mediaType string, digest, size int >= 0."""
    if not isinstance(desc, dict):
        raise Fail("%s: descriptor is not an object" % what)
    digest = desc.get("digest")
    size = desc.get("size")
    if not isinstance(desc.get("mediaType"), str):
        raise Fail("%s: descriptor has no mediaType" % what)
    if not isinstance(digest, str) or not ANY_DIGEST_RE.match(digest):
        raise Fail("%s: descriptor digest %r is malformed" % (what, digest))
    if not SHA256_DIGEST_RE.match(digest):
        raise Fail("%s: unsupported digest %r (only sha256 with lowercase hex)" % (what, digest))
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise Fail("%s: descriptor size %r is not a non-negative integer" % (what, size))
    return desc


def check_blob(data, desc, what):
    """OCI: content must match the descriptor's digest and size."""
    if len(data) != desc["size"]:
        raise Fail("%s: size %d != descriptor size %d" % (what, len(data), desc["size"]))
    actual = sha256_digest(data)
    if actual != desc["digest"]:
        raise Fail("%s: content digest %s != descriptor digest %s" % (what, actual, desc["digest"]))
    return data


# ---------------------------------------------------------------------------
# Keys and ECDSA
# ---------------------------------------------------------------------------

def load_public_key(path):
    """PKIX `-----BEGIN PUBLIC KEY-----` PEM, EC P-256 (cosign, containers/image)."""
    try:
        with open(path, "rb") as fh:
            pem = fh.read()
    except OSError as exc:
        raise Usage("cannot read public key %s: %s" % (path, exc)) from None
    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError as exc:
        raise Fail("public key %s: not a PKIX PEM public key (%s)" % (path, exc)) from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, ec.SECP256R1):
        raise Fail("public key %s: not an EC P-256 key" % path)
    return key


def ecdsa_verify(public_key, signature_der, data):
    """ECDSA P-256 over SHA-256 of the exact bytes, ASN.1 DER signature."""
    try:
        public_key.verify(signature_der, data, ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False


def ecdsa_sign(private_key, data):
    return private_key.sign(data, ec.ECDSA(hashes.SHA256()))


def password_from_env():
    # cosign reads COSIGN_PASSWORD; an unset variable is treated as "".
    return os.environ.get("COSIGN_PASSWORD", "").encode("utf-8")


def _der_tlv(buf, pos):
    """Minimal DER TLV reader: returns (tag, value_start, value_end)."""
    if pos + 2 > len(buf):
        raise ValueError("truncated DER")
    tag = buf[pos]
    length = buf[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or pos + count > len(buf):
            raise ValueError("bad DER length")
        length = int.from_bytes(buf[pos:pos + count], "big")
        pos += count
    if pos + length > len(buf):
        raise ValueError("truncated DER value")
    return tag, pos, pos + length


# id-ecPublicKey (1.2.840.10045.2.1) and prime256v1 (1.2.840.10045.3.1.7), DER encoded.
OID_EC_PUBLIC_KEY = bytes.fromhex("06072a8648ce3d0201")
OID_PRIME256V1 = bytes.fromhex("06082a8648ce3d030107")


def check_pkcs8_ec_p256(der):
    """RFC 5208 PrivateKeyInfo ::= SEQUENCE { version INTEGER (0),
    privateKeyAlgorithm AlgorithmIdentifier {id-ecPublicKey, prime256v1},
    privateKey OCTET STRING }. Rejects SEC1 'EC PRIVATE KEY' DER, which
    cryptography would otherwise also load."""
    try:
        tag, start, end = _der_tlv(der, 0)
        if tag != 0x30 or end != len(der):
            raise ValueError("not a single DER SEQUENCE")
        tag, vstart, vend = _der_tlv(der, start)
        if tag != 0x02 or der[vstart:vend] != b"\x00":
            raise ValueError("version is not INTEGER 0 (not PKCS#8)")
        tag, astart, aend = _der_tlv(der, vend)
        if tag != 0x30:
            raise ValueError("no AlgorithmIdentifier SEQUENCE")
        alg = der[astart:aend]
        if alg != OID_EC_PUBLIC_KEY + OID_PRIME256V1:
            raise ValueError("algorithm is not id-ecPublicKey/prime256v1")
        tag, _, _ = _der_tlv(der, aend)
        if tag != 0x04:
            raise ValueError("privateKey is not an OCTET STRING")
    except ValueError as exc:
        raise Fail("decrypted key is not PKCS#8 EC P-256 DER: %s" % exc) from None


def pem_encode(pem_type, der):
    b64 = base64.b64encode(der).decode("ascii")
    lines = [b64[i:i + 64] for i in range(0, len(b64), 64)]
    return ("-----BEGIN %s-----\n%s\n-----END %s-----\n" % (pem_type, "\n".join(lines), pem_type)).encode("ascii")


def pem_decode(data, what):
    """Exactly one PEM block; returns (type, der bytes)."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise Fail("%s: not ASCII PEM" % what) from None
    match = re.search(r"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)\r?\n-----END \1-----", text, re.S)
    if not match:
        raise Fail("%s: no PEM block found" % what)
    if text.count("-----BEGIN ") != 1:
        raise Fail("%s: expected exactly one PEM block" % what)
    body = "".join(match.group(2).split())
    return match.group(1), b64_std_decode(body, what + " PEM body")


def scrypt_key(password, salt, n, r, p):
    return hashlib.scrypt(password, salt=salt, n=n, r=r, p=p, dklen=32, maxmem=SCRYPT_MAXMEM)


def encrypt_cosign_key(der, password, scrypt_n, pem_type):
    """sigstore/sigstore encrypted key: scrypt KDF + NaCl secretbox of PKCS#8 DER.
    The JSON ciphertext is libsodium crypto_secretbox_easy output (tag first)
    WITHOUT the nonce, which is stored separately in cipher.nonce."""
    salt = os.urandom(32)
    nonce = os.urandom(24)
    key = scrypt_key(password, salt, scrypt_n, 8, 1)
    encrypted = nacl.secret.SecretBox(key).encrypt(der, nonce)
    body = {
        "kdf": {"name": "scrypt", "params": {"N": scrypt_n, "r": 8, "p": 1},
                "salt": base64.b64encode(salt).decode("ascii")},
        "cipher": {"name": "nacl/secretbox", "nonce": base64.b64encode(nonce).decode("ascii")},
        "ciphertext": base64.b64encode(encrypted.ciphertext).decode("ascii"),
    }
    return pem_encode(pem_type, json.dumps(body, separators=(",", ":")).encode("utf-8"))


def decrypt_cosign_key(pem_bytes, password, what="private key"):
    """Parse + decrypt an ENCRYPTED SIGSTORE/COSIGN PRIVATE KEY; returns the
    cryptography private key object (EC P-256, PKCS#8 checked)."""
    pem_type, body = pem_decode(pem_bytes, what)
    if pem_type not in ENCRYPTED_PEM_TYPES:
        raise Fail("%s: PEM type %r is not one of %s" % (what, pem_type, list(ENCRYPTED_PEM_TYPES)))
    doc = strict_json(body, what + " JSON")
    if not isinstance(doc, dict):
        raise Fail("%s: JSON body is not an object" % what)
    kdf = doc.get("kdf")
    cipher = doc.get("cipher")
    if not isinstance(kdf, dict) or kdf.get("name") != "scrypt":
        raise Fail("%s: kdf.name must be \"scrypt\"" % what)
    params = kdf.get("params")
    if not isinstance(params, dict):
        raise Fail("%s: kdf.params missing" % what)
    n, r, p = params.get("N"), params.get("r"), params.get("p")
    for name, val in (("N", n), ("r", r), ("p", p)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise Fail("%s: kdf.params.%s must be a positive integer" % (what, name))
    if n < 2 or n & (n - 1) or n > 2 ** 20:
        raise Fail("%s: kdf.params.N=%d is not a power of two in [2, 2^20]" % (what, n))
    if 128 * r * n * p > SCRYPT_MAXMEM // 2:
        raise Fail("%s: scrypt parameters need too much memory" % what)
    salt = b64_std_decode(kdf.get("salt"), what + " kdf.salt")
    if not isinstance(cipher, dict) or cipher.get("name") != "nacl/secretbox":
        raise Fail("%s: cipher.name must be \"nacl/secretbox\"" % what)
    nonce = b64_std_decode(cipher.get("nonce"), what + " cipher.nonce")
    if len(nonce) != 24:
        raise Fail("%s: cipher.nonce is %d bytes, expected 24" % (what, len(nonce)))
    ciphertext = b64_std_decode(doc.get("ciphertext"), what + " ciphertext")
    key = scrypt_key(password, salt, n, r, p)
    try:
        der = nacl.secret.SecretBox(key).decrypt(ciphertext, nonce)
    except nacl.exceptions.CryptoError:
        raise Fail("%s: decryption failed (wrong password or corrupted key)" % what) from None
    check_pkcs8_ec_p256(der)
    try:
        private_key = serialization.load_der_private_key(der, password=None)
    except ValueError as exc:
        raise Fail("%s: decrypted DER does not load: %s" % (what, exc)) from None
    if not isinstance(private_key, ec.EllipticCurvePrivateKey) or not isinstance(private_key.curve, ec.SECP256R1):
        raise Fail("%s: not an EC P-256 private key" % what)
    return private_key


def load_private_key(path):
    """An encrypted cosign/sigstore key, or (for convenience) a plain PEM private key."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise Usage("cannot read private key %s: %s" % (path, exc)) from None
    if any(("BEGIN " + t).encode() in data for t in ENCRYPTED_PEM_TYPES):
        return decrypt_cosign_key(data, password_from_env(), path)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise Fail("private key %s: unreadable (%s)" % (path, exc)) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise Fail("private key %s: not EC P-256" % path)
    return key


def public_pem(private_key):
    return private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


# ---------------------------------------------------------------------------
# DSSE
# ---------------------------------------------------------------------------

def pae(payload_type, body):
    """DSSE v1 Pre-Authentication Encoding:
    "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths = decimal byte counts."""
    type_bytes = payload_type.encode("utf-8") if isinstance(payload_type, str) else payload_type
    return b"".join([b"DSSEv1 ", str(len(type_bytes)).encode("ascii"), b" ", type_bytes, b" ",
                     str(len(body)).encode("ascii"), b" ", body])


# ---------------------------------------------------------------------------
# JSON schemas (draft-07) written from the specs named in each comment
# ---------------------------------------------------------------------------

# RFC 3339 timestamps. SPDX 2.3 section 6.9 wants YYYY-MM-DDThh:mm:ssZ exactly;
# in-toto/SLSA "Timestamp" is RFC 3339 in UTC ("Z"); CycloneDX allows offsets.
RE_SPDX_CREATED = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"
RE_UTC_TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$"
RE_RFC3339 = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$"
# RFC 3986 absolute URI: scheme ":" rest, no whitespace.
RE_URI = r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$"
RE_URI_NO_FRAGMENT = r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s#]+$"

# in-toto attestation v1 DigestSet: algorithm -> lowercase hex.
DIGEST_SET = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]+$"},
}

# in-toto attestation v1 ResourceDescriptor (as used by SLSA v1); the brief
# requires at least one of uri / digest / name.
RESOURCE_DESCRIPTOR = {
    "type": "object",
    "anyOf": [{"required": ["uri"]}, {"required": ["digest"]}, {"required": ["name"]}],
    "properties": {
        "uri": {"type": "string", "pattern": RE_URI},
        "digest": DIGEST_SET,
        "name": {"type": "string", "minLength": 1},
        "downloadLocation": {"type": "string"},
        "mediaType": {"type": "string"},
        "content": {"type": "string"},
        "annotations": {"type": "object"},
    },
}

# in-toto Statement v1 (github.com/in-toto/attestation spec/v1/statement.md).
SCHEMA_INTOTO = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "in-toto Statement v1",
    "type": "object",
    "required": ["_type", "subject", "predicateType", "predicate"],
    "properties": {
        "_type": {"const": INTOTO_STATEMENT_V1},
        "subject": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "digest"],
                "properties": {"name": {"type": "string"}, "digest": DIGEST_SET},
            },
        },
        "predicateType": {"type": "string", "pattern": RE_URI},
        "predicate": {"type": "object"},
    },
}

# SLSA provenance v1 predicate (slsa.dev/spec/v1.0/provenance).
SCHEMA_SLSA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "SLSA provenance v1 predicate",
    "type": "object",
    "required": ["buildDefinition", "runDetails"],
    "properties": {
        "buildDefinition": {
            "type": "object",
            "required": ["buildType", "externalParameters"],
            "properties": {
                "buildType": {"type": "string", "pattern": RE_URI},
                "externalParameters": {"type": "object"},
                "internalParameters": {"type": "object"},
                "resolvedDependencies": {"type": "array", "items": RESOURCE_DESCRIPTOR},
            },
        },
        "runDetails": {
            "type": "object",
            "required": ["builder"],
            "properties": {
                "builder": {
                    "type": "object",
                    "required": ["id"],
                    "properties": {
                        "id": {"type": "string", "pattern": RE_URI},
                        # SLSA v1: builder.version is map(string -> string).
                        "version": {"type": "object", "additionalProperties": {"type": "string"}},
                        "builderDependencies": {"type": "array", "items": RESOURCE_DESCRIPTOR},
                    },
                },
                "metadata": {
                    "type": "object",
                    "properties": {
                        "invocationId": {"type": "string"},
                        "startedOn": {"type": "string", "pattern": RE_UTC_TIMESTAMP},
                        "finishedOn": {"type": "string", "pattern": RE_UTC_TIMESTAMP},
                    },
                },
                "byproducts": {"type": "array", "items": RESOURCE_DESCRIPTOR},
            },
        },
    },
}

# SPDX 2.3 JSON (spdx-spec schemas/spdx-schema-2-3.json plus the spec's MUSTs
# the official schema leaves out: spdxVersion/dataLicense/SPDXID values,
# documentNamespace, creator prefixes, SPDXID syntax, a DESCRIBES relationship).
SPDX_RELATIONSHIP_TYPES = [
    "VARIANT_OF", "COPY_OF", "PATCH_FOR", "TEST_DEPENDENCY_OF", "CONTAINED_BY", "DATA_FILE_OF",
    "OPTIONAL_COMPONENT_OF", "ANCESTOR_OF", "GENERATES", "CONTAINS", "OPTIONAL_DEPENDENCY_OF",
    "FILE_ADDED", "REQUIREMENT_DESCRIPTION_FOR", "DEV_DEPENDENCY_OF", "DEPENDENCY_OF",
    "BUILD_DEPENDENCY_OF", "DESCRIBES", "PREREQUISITE_FOR", "HAS_PREREQUISITE",
    "PROVIDED_DEPENDENCY_OF", "DYNAMIC_LINK", "DESCRIBED_BY", "METAFILE_OF",
    "DEPENDENCY_MANIFEST_OF", "PATCH_APPLIED", "RUNTIME_DEPENDENCY_OF", "TEST_OF", "TEST_TOOL_OF",
    "DEPENDS_ON", "SPECIFICATION_FOR", "FILE_MODIFIED", "DISTRIBUTION_ARTIFACT", "AMENDS",
    "DOCUMENTATION_OF", "GENERATED_FROM", "STATIC_LINK", "OTHER", "BUILD_TOOL_OF", "TEST_CASE_OF",
    "PACKAGE_OF", "DESCENDANT_OF", "FILE_DELETED", "EXPANDED_FROM_ARCHIVE", "DEV_TOOL_OF",
    "EXAMPLE_OF",
]
SPDX_CHECKSUM_ALGS = [
    "SHA1", "BLAKE3", "SHA3-384", "SHA256", "SHA384", "BLAKE2b-512", "BLAKE2b-256", "SHA3-512",
    "MD2", "ADLER32", "MD4", "SHA3-256", "BLAKE2b-384", "SHA512", "MD6", "MD5", "SHA224",
]
SPDX_PACKAGE_PROPERTIES = [
    "SPDXID", "annotations", "attributionTexts", "builtDate", "checksums", "comment",
    "copyrightText", "description", "downloadLocation", "externalRefs", "filesAnalyzed", "hasFiles",
    "homepage", "licenseComments", "licenseConcluded", "licenseDeclared", "licenseInfoFromFiles",
    "name", "originator", "packageFileName", "packageVerificationCode", "primaryPackagePurpose",
    "releaseDate", "sourceInfo", "summary", "supplier", "validUntilDate", "versionInfo",
]
SPDX_TOP_PROPERTIES = [
    "SPDXID", "annotations", "comment", "creationInfo", "dataLicense", "externalDocumentRefs",
    "hasExtractedLicensingInfos", "name", "revieweds", "spdxVersion", "documentNamespace",
    "documentDescribes", "packages", "files", "snippets", "relationships",
]
RE_SPDXID = r"^SPDXRef-[A-Za-z0-9.-]+$"


def _closed_object(properties, required=(), closed_names=None):
    """An object whose allowed property names are `closed_names` (defaults to
    the keys of `properties`); the official SPDX 2.3 schema sets
    additionalProperties:false on these objects."""
    names = list(closed_names) if closed_names is not None else list(properties)
    schema = {"type": "object", "properties": dict(properties),
              "propertyNames": {"enum": names}}
    if required:
        schema["required"] = list(required)
    return schema


SCHEMA_SPDX = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "SPDX 2.3 document (JSON)",
    **_closed_object(
        {
            "spdxVersion": {"const": "SPDX-2.3"},
            "dataLicense": {"const": "CC0-1.0"},
            "SPDXID": {"const": "SPDXRef-DOCUMENT"},
            "name": {"type": "string", "minLength": 1},
            "documentNamespace": {"type": "string", "pattern": RE_URI_NO_FRAGMENT},
            "creationInfo": _closed_object(
                {
                    "created": {"type": "string", "pattern": RE_SPDX_CREATED},
                    "creators": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"type": "string", "pattern": "^(Tool|Organization|Person): .+"},
                    },
                    "licenseListVersion": {"type": "string"},
                    "comment": {"type": "string"},
                },
                required=["created", "creators"]),
            "packages": {
                "type": "array",
                "items": _closed_object(
                    {
                        "SPDXID": {"type": "string", "pattern": RE_SPDXID},
                        "name": {"type": "string", "minLength": 1},
                        # NOASSERTION / NONE / a URI.
                        "downloadLocation": {"type": "string", "minLength": 1},
                        "filesAnalyzed": {"type": "boolean"},
                        "versionInfo": {"type": "string"},
                        "checksums": {
                            "type": "array",
                            "items": _closed_object(
                                {"algorithm": {"enum": SPDX_CHECKSUM_ALGS},
                                 "checksumValue": {"type": "string", "pattern": "^[0-9a-f]+$"}},
                                required=["algorithm", "checksumValue"]),
                        },
                        "externalRefs": {
                            "type": "array",
                            "items": _closed_object(
                                {
                                    "referenceCategory": {
                                        "enum": ["OTHER", "PERSISTENT-ID", "SECURITY", "PACKAGE-MANAGER"]},
                                    "referenceType": {"type": "string", "minLength": 1},
                                    "referenceLocator": {"type": "string", "pattern": r"^\S+$"},
                                    "comment": {"type": "string"},
                                },
                                required=["referenceCategory", "referenceType", "referenceLocator"]),
                        },
                    },
                    required=["SPDXID", "name", "downloadLocation"],
                    closed_names=SPDX_PACKAGE_PROPERTIES),
            },
            "files": {"type": "array", "items": {"type": "object", "required": ["SPDXID", "fileName", "checksums"],
                                                 "properties": {"SPDXID": {"type": "string", "pattern": RE_SPDXID}}}},
            "documentDescribes": {"type": "array", "items": {"type": "string"}},
            "relationships": {
                "type": "array",
                "items": _closed_object(
                    {
                        "spdxElementId": {"type": "string", "minLength": 1},
                        "relatedSpdxElement": {"type": "string", "minLength": 1},
                        "relationshipType": {"enum": SPDX_RELATIONSHIP_TYPES},
                        "comment": {"type": "string"},
                    },
                    required=["spdxElementId", "relatedSpdxElement", "relationshipType"]),
                # The document must DESCRIBE something.
                "contains": {
                    "type": "object",
                    "properties": {"spdxElementId": {"const": "SPDXRef-DOCUMENT"},
                                   "relationshipType": {"const": "DESCRIBES"}},
                    "required": ["spdxElementId", "relationshipType"],
                },
            },
        },
        required=["spdxVersion", "dataLicense", "SPDXID", "name", "documentNamespace",
                  "creationInfo", "packages", "relationships"],
        closed_names=SPDX_TOP_PROPERTIES),
}

# CycloneDX 1.5 JSON (cyclonedx.org/docs/1.5/json).
CYCLONEDX_COMPONENT_TYPES = [
    "application", "framework", "library", "container", "platform", "operating-system",
    "device", "device-driver", "firmware", "file", "machine-learning-model", "data",
]
SCHEMA_CYCLONEDX = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "CycloneDX 1.5 BOM",
    "type": "object",
    "required": ["bomFormat", "specVersion", "serialNumber", "version", "components"],
    "properties": {
        "bomFormat": {"const": "CycloneDX"},
        "specVersion": {"const": "1.5"},
        "serialNumber": {"type": "string",
                         "pattern": "^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"},
        "version": {"type": "integer", "minimum": 1},
        "metadata": {
            "type": "object",
            "properties": {
                "timestamp": {"type": "string", "pattern": RE_RFC3339},
                "component": {"$ref": "#/definitions/component"},
            },
        },
        "components": {"type": "array", "items": {"$ref": "#/definitions/component"}},
        "dependencies": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["ref"],
                "properties": {
                    "ref": {"type": "string", "minLength": 1},
                    "dependsOn": {"type": "array", "uniqueItems": True, "items": {"type": "string", "minLength": 1}},
                },
            },
        },
    },
    "definitions": {
        "component": {
            "type": "object",
            "required": ["type", "name"],
            "properties": {
                "type": {"enum": CYCLONEDX_COMPONENT_TYPES},
                "name": {"type": "string", "minLength": 1},
                "version": {"type": "string"},
                "bom-ref": {"type": "string", "minLength": 1},
                # purl-spec: scheme "pkg:" then type "/" ...
                "purl": {"type": "string", "pattern": r"^pkg:[A-Za-z.+-][A-Za-z0-9.+-]*/\S+$"},
                "hashes": {
                    "type": "array",
                    "items": {"type": "object", "required": ["alg", "content"],
                              "properties": {"alg": {"type": "string"},
                                             "content": {"type": "string", "pattern": "^[0-9a-fA-F]+$"}}},
                },
                "components": {"type": "array", "items": {"$ref": "#/definitions/component"}},
            },
        },
    },
}

SCHEMAS = {
    "intoto": SCHEMA_INTOTO,
    "slsa": SCHEMA_SLSA,
    "spdx": SCHEMA_SPDX,
    "cyclonedx": SCHEMA_CYCLONEDX,
}


def _error_path(error):
    path = "$"
    for part in error.absolute_path:
        path += "[%d]" % part if isinstance(part, int) else ".%s" % part
    return path


def _semantic_checks(kind, doc):
    """Checks a JSON schema cannot express (spec cross references)."""
    if kind == "spdx":
        # SPDX 2.3 section 3.2 / 7: SPDXIDs are unique; relationships refer to
        # elements of this document, an external DocumentRef-, NONE or NOASSERTION.
        ids = ["SPDXRef-DOCUMENT"]
        for section in ("packages", "files", "snippets"):
            ids += [item.get("SPDXID") for item in doc.get(section, []) if isinstance(item, dict)]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise Fail("spdx: duplicate SPDXID(s) %s" % dupes)
        known = set(ids)
        for i, rel in enumerate(doc.get("relationships", [])):
            for field in ("spdxElementId", "relatedSpdxElement"):
                ref = rel.get(field)
                if ref in known or ref.startswith("DocumentRef-") or \
                        (field == "relatedSpdxElement" and ref in ("NONE", "NOASSERTION")):
                    continue
                raise Fail("spdx: $.relationships[%d].%s %r names no element of the document" % (i, field, ref))
    elif kind == "cyclonedx":
        # CycloneDX: bom-ref values are unique within a BOM; dependencies refer to them.
        refs = []

        def walk(components):
            for comp in components or []:
                if "bom-ref" in comp:
                    refs.append(comp["bom-ref"])
                walk(comp.get("components"))
        walk([doc.get("metadata", {}).get("component")] if doc.get("metadata", {}).get("component") else [])
        walk(doc.get("components"))
        dupes = sorted({r for r in refs if refs.count(r) > 1})
        if dupes:
            raise Fail("cyclonedx: duplicate bom-ref(s) %s" % dupes)
        known = set(refs)
        for i, dep in enumerate(doc.get("dependencies", []) or []):
            for ref in [dep.get("ref")] + list(dep.get("dependsOn", []) or []):
                if ref not in known:
                    raise Fail("cyclonedx: $.dependencies[%d] refers to unknown bom-ref %r" % (i, ref))


def validate_with(schema, doc, what, validator=None):
    if validator is None:
        validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        first = errors[0]
        more = " (+%d more)" % (len(errors) - 1) if len(errors) > 1 else ""
        raise Fail("%s: %s: %s%s" % (what, _error_path(first), first.message[:300], more))


def validate_kind(kind, doc):
    """Validate `doc` against the inline schema for `kind` plus semantic checks."""
    validate_with(SCHEMAS[kind], doc, kind)
    _semantic_checks(kind, doc)


def _local_schema_loader(schema_dir):
    """$ref resolution restricted to JSON files in `schema_dir` (matched by the
    basename of the referenced URI); anything else is refused - never fetched."""
    def load(uri):
        base = posixpath.basename(urllib.parse.urlsplit(uri).path)
        candidate = os.path.join(schema_dir, base)
        if not base or not os.path.isfile(candidate):
            raise Fail("schema $ref %r is not a local file in %s (network fetches are disabled)" % (uri, schema_dir))
        with open(candidate, "rb") as fh:
            return strict_json(fh.read(), candidate)
    return load


def official_schema_validator(schema_path):
    """A validator for an official schema file (draft-07 or 2020-12 as its
    $schema says), with $refs resolved only from files beside it."""
    try:
        with open(schema_path, "rb") as fh:
            schema = strict_json(fh.read(), schema_path)
    except OSError as exc:
        raise Usage("cannot read schema file %s: %s" % (schema_path, exc)) from None
    schema_dir = os.path.dirname(os.path.abspath(schema_path))
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    cls.check_schema(schema)
    load = _local_schema_loader(schema_dir)
    # Pre-load every sibling *.json under both its $id and its file URI.
    siblings = {}
    for name in sorted(os.listdir(schema_dir)):
        path = os.path.join(schema_dir, name)
        if name.endswith(".json") and os.path.isfile(path):
            try:
                with open(path, "rb") as fh:
                    doc = json.loads(fh.read().decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(doc, dict):
                siblings["file://" + urllib.request.pathname2url(path)] = doc
                sid = doc.get("$id") or doc.get("id")
                if isinstance(sid, str) and sid:
                    siblings[sid.rstrip("#")] = doc
    base_uri = schema.get("$id") or ("file://" + urllib.request.pathname2url(os.path.abspath(schema_path)))
    format_checker = getattr(cls, "FORMAT_CHECKER", None) or jsonschema.FormatChecker()
    try:
        import referencing  # jsonschema >= 4.18
        import referencing.jsonschema
    except ImportError:
        referencing = None
    if referencing is not None:
        spec = referencing.jsonschema.specification_with(
            schema.get("$schema", "http://json-schema.org/draft-07/schema#"),
            default=referencing.jsonschema.DRAFT7)

        def retrieve(uri):
            return referencing.Resource.from_contents(load(uri), default_specification=spec)
        registry = referencing.Registry(retrieve=retrieve).with_resources(
            [(uri, referencing.Resource.from_contents(doc, default_specification=spec))
             for uri, doc in siblings.items()])
        return cls(schema, registry=registry, format_checker=format_checker)

    class LocalOnlyResolver(jsonschema.RefResolver):
        def resolve_remote(self, uri):
            doc = load(uri)
            if self.cache_remote:
                self.store[uri] = doc
            return doc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        resolver = LocalOnlyResolver(base_uri, schema, store=siblings)
        return cls(schema, resolver=resolver, format_checker=format_checker)


# ---------------------------------------------------------------------------
# Image sources: an OCI image layout directory or a registry (HTTP, no auth)
# ---------------------------------------------------------------------------

class LayoutSource:
    """OCI image-spec image-layout: oci-layout, index.json, blobs/sha256/<hex>."""

    def __init__(self, root):
        self.root = root
        layout_file = os.path.join(root, "oci-layout")
        if not os.path.isfile(layout_file):
            raise Fail("layout %s: no oci-layout file" % root)
        with open(layout_file, "rb") as fh:
            marker = strict_json(fh.read(), "oci-layout")
        if not isinstance(marker, dict) or not isinstance(marker.get("imageLayoutVersion"), str):
            raise Fail("layout %s: oci-layout has no imageLayoutVersion" % root)
        try:
            with open(os.path.join(root, "index.json"), "rb") as fh:
                self.index = strict_json(fh.read(), "index.json")
        except OSError as exc:
            raise Fail("layout %s: cannot read index.json (%s)" % (root, exc)) from None
        if not isinstance(self.index, dict) or not isinstance(self.index.get("manifests"), list):
            raise Fail("layout %s: index.json has no manifests array" % root)

    def describe(self):
        return "layout %s" % self.root

    def blob(self, desc, what):
        check_descriptor(desc, what)
        path = os.path.join(self.root, "blobs", "sha256", desc["digest"].split(":", 1)[1])
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            raise Fail("%s: blob %s missing from layout" % (what, desc["digest"])) from None
        return check_blob(data, desc, what)

    def manifest(self, tag):
        """Returns (digest, mediaType, body bytes) for the index.json entry
        whose org.opencontainers.image.ref.name == tag, or None."""
        matches = [d for d in self.index["manifests"]
                   if isinstance(d, dict) and isinstance(d.get("annotations"), dict)
                   and d["annotations"].get(ANN_REF_NAME) == tag]
        if not matches:
            return None
        digests = {d.get("digest") for d in matches}
        if len(digests) > 1:
            raise Fail("layout: tag %r names several manifests %s" % (tag, sorted(map(str, digests))))
        desc = matches[0]
        body = self.blob(desc, "manifest %r" % tag)
        return desc["digest"], desc["mediaType"], body


class RegistrySource:
    """OCI distribution-spec pull API over plain HTTP without auth."""

    def __init__(self, base_url, repo):
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise Usage("--registry must be an http:// URL, got %r" % base_url)
        self.base = base_url.rstrip("/")
        self.repo = repo.strip("/")

    def describe(self):
        return "registry %s/%s" % (self.base, self.repo)

    def _get(self, path, accept=None):
        url = "%s/v2/%s/%s" % (self.base, self.repo, path)
        req = urllib.request.Request(url, method="GET")
        if accept:
            req.add_header("Accept", accept)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.read(), resp.headers
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None, None
            raise Fail("GET %s: HTTP %d" % (url, exc.code)) from None
        except (urllib.error.URLError, OSError) as exc:
            raise Fail("GET %s: %s" % (url, exc)) from None

    def blob(self, desc, what):
        check_descriptor(desc, what)
        data, _ = self._get("blobs/" + desc["digest"])
        if data is None:
            raise Fail("%s: blob %s not found (404)" % (what, desc["digest"]))
        return check_blob(data, desc, what)

    def manifest(self, ref):
        """Returns (digest, mediaType, body) or None on 404; the digest is the
        sha256 of the exact body bytes (distribution-spec content digest)."""
        body, headers = self._get("manifests/" + ref, accept=MANIFEST_ACCEPT)
        if body is None:
            return None
        digest = sha256_digest(body)
        if ":" in ref and ref != digest:
            raise Fail("manifest %s: body digest is %s" % (ref, digest))
        header_digest = headers.get("Docker-Content-Digest")
        if header_digest and header_digest.strip() != digest:
            raise Fail("manifest %s: Docker-Content-Digest %s != body digest %s" % (ref, header_digest, digest))
        content_type = (headers.get("Content-Type") or "").split(";")[0].strip()
        return digest, content_type, body


# ---------------------------------------------------------------------------
# verify
# ---------------------------------------------------------------------------

def parse_oci_manifest(body, transport_media_type, what):
    """OCI image manifest (image-spec manifest.md): schemaVersion 2, config
    and layers descriptors; cosign writes application/vnd.oci.image.manifest.v1+json."""
    manifest = strict_json(body, what)
    if not isinstance(manifest, dict):
        raise Fail("%s: not a JSON object" % what)
    if manifest.get("schemaVersion") != 2:
        raise Fail("%s: schemaVersion must be 2" % what)
    media_type = manifest.get("mediaType", transport_media_type)
    if media_type != MT_OCI_MANIFEST:
        raise Fail("%s: media type %r, expected %s" % (what, media_type, MT_OCI_MANIFEST))
    if "mediaType" in manifest and transport_media_type and transport_media_type != MT_OCI_MANIFEST:
        raise Fail("%s: served as %r but declares %s" % (what, transport_media_type, MT_OCI_MANIFEST))
    check_descriptor(manifest.get("config"), what + " config")
    layers = manifest.get("layers")
    if not isinstance(layers, list):
        raise Fail("%s: layers is not an array" % what)
    for i, layer in enumerate(layers):
        check_descriptor(layer, "%s layer %d" % (what, i))
        if "annotations" in layer and not isinstance(layer["annotations"], dict):
            raise Fail("%s layer %d: annotations is not an object" % (what, i))
    return manifest


def check_cosign_config(src, manifest, what):
    """The config of a cosign .sig/.att manifest is an OCI image config
    (image-spec config.md: architecture, os, rootfs.type "layers") whose
    rootfs.diff_ids lists one entry per layer, equal to that layer's digest."""
    desc = manifest["config"]
    if desc["mediaType"] != MT_OCI_CONFIG:
        raise Fail("%s config: mediaType %r, expected %s" % (what, desc["mediaType"], MT_OCI_CONFIG))
    config = strict_json(src.blob(desc, what + " config"), what + " config")
    if not isinstance(config, dict):
        raise Fail("%s config: not a JSON object" % what)
    for field in ("architecture", "os"):
        if not isinstance(config.get(field), str):
            raise Fail("%s config: %s must be a string" % (what, field))
    rootfs = config.get("rootfs")
    if not isinstance(rootfs, dict) or rootfs.get("type") != "layers":
        raise Fail("%s config: rootfs.type must be \"layers\"" % what)
    diff_ids = rootfs.get("diff_ids")
    layer_digests = [layer["digest"] for layer in manifest["layers"]]
    if diff_ids != layer_digests:
        raise Fail("%s config: rootfs.diff_ids %s != layer digests %s" % (what, diff_ids, layer_digests))


def parse_simplesigning_payload(payload):
    """containers/image signature/sigstore_payload.go strict parser, as stated
    in the reference: exact key sets at every level. Returns (digest, reference)."""
    doc = strict_json(payload, "payload")
    exact_keys(doc, ("critical", "optional"), "payload")
    optional = doc["optional"]
    if optional is not None:
        if not isinstance(optional, dict):
            raise Fail("payload: optional must be null or an object")
        if "creator" in optional and not isinstance(optional["creator"], str):
            raise Fail("payload: optional.creator must be a string")
        if "timestamp" in optional:
            ts = optional["timestamp"]
            if isinstance(ts, bool) or not isinstance(ts, (int, float)) or \
                    (isinstance(ts, float) and not ts.is_integer()):
                raise Fail("payload: optional.timestamp must be an integer")
    critical = doc["critical"]
    exact_keys(critical, ("type", "image", "identity"), "payload critical")
    if critical["type"] != SIMPLESIGNING_TYPE:
        raise Fail("payload: critical.type %r != %r" % (critical["type"], SIMPLESIGNING_TYPE))
    exact_keys(critical["image"], ("docker-manifest-digest",), "payload critical.image")
    exact_keys(critical["identity"], ("docker-reference",), "payload critical.identity")
    digest = critical["image"]["docker-manifest-digest"]
    reference = critical["identity"]["docker-reference"]
    if not isinstance(digest, str) or not isinstance(reference, str):
        raise Fail("payload: docker-manifest-digest and docker-reference must be strings")
    if not reference or "@" in reference:
        # reference doc: write the full registry/repo:tag, no digest in it.
        raise Fail("payload: docker-reference %r must be a non-empty registry/repo:tag" % reference)
    return digest, reference


def verify_signatures(src, image_digest, public_key, identity):
    """cosign `.sig` tag: at least one simple-signing layer must verify."""
    sig_tag = image_digest.replace(":", "-", 1) + ".sig"
    found = src.manifest(sig_tag)
    if found is None:
        raise Fail("no signature manifest %s in %s" % (sig_tag, src.describe()))
    _, media_type, body = found
    manifest = parse_oci_manifest(body, media_type, "signature manifest " + sig_tag)
    check_cosign_config(src, manifest, "signature manifest")
    ok = 0
    problems = []
    for i, layer in enumerate(manifest["layers"]):
        if layer["mediaType"] != MT_SIMPLESIGNING:
            continue
        what = "sig layer %d" % i
        try:
            payload = src.blob(layer, what)
            sig_b64 = (layer.get("annotations") or {}).get(ANN_COSIGN_SIGNATURE)
            if not sig_b64:
                raise Fail("%s: no %s annotation" % (what, ANN_COSIGN_SIGNATURE))
            signature = b64_std_decode(sig_b64, what + " signature")
            if not ecdsa_verify(public_key, signature, payload):
                raise Fail("%s: ECDSA signature does not verify with the given key" % what)
            digest, reference = parse_simplesigning_payload(payload)
            if digest != image_digest:
                raise Fail("%s: docker-manifest-digest %s != image digest %s" % (what, digest, image_digest))
            if identity is not None and reference != identity:
                raise Fail("%s: docker-reference %r != expected identity %r" % (what, reference, identity))
            ok += 1
        except Fail as exc:
            msg = str(exc)
            problems.append(msg if msg.startswith(what) else "%s: %s" % (what, msg))
    if ok == 0:
        if not problems:
            raise Fail("signature manifest %s has no %s layer" % (sig_tag, MT_SIMPLESIGNING))
        raise Fail("no valid signature: " + "; ".join(problems))
    return ok


def verify_attestation_layer(src, layer, what, image_hex, public_key):
    """cosign `.att` layer = DSSE envelope of an in-toto Statement v1.
    Returns the statement on success."""
    annotations = layer.get("annotations") or {}
    annotated_type = annotations.get(ANN_PREDICATE_TYPE)
    if not isinstance(annotated_type, str) or not annotated_type:
        raise Fail("%s: no %r annotation" % (what, ANN_PREDICATE_TYPE))
    envelope = strict_json(src.blob(layer, what), what + " envelope")
    # DSSE envelope: payloadType, payload (base64), signatures [{keyid, sig}].
    if not isinstance(envelope, dict):
        raise Fail("%s: envelope is not an object" % what)
    payload_type = envelope.get("payloadType")
    if payload_type != DSSE_PAYLOAD_TYPE_INTOTO:
        raise Fail("%s: payloadType %r != %r" % (what, payload_type, DSSE_PAYLOAD_TYPE_INTOTO))
    body = b64_std_decode(envelope.get("payload"), what + " payload")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise Fail("%s: signatures must be a non-empty array" % what)
    signed = pae(payload_type, body)
    verified = False
    for j, entry in enumerate(signatures):
        if not isinstance(entry, dict):
            raise Fail("%s: signatures[%d] is not an object" % (what, j))
        if "keyid" in entry and not isinstance(entry["keyid"], str):
            raise Fail("%s: signatures[%d].keyid is not a string" % (what, j))
        if ecdsa_verify(public_key, b64_std_decode(entry.get("sig"), "%s signatures[%d].sig" % (what, j)), signed):
            verified = True
    if not verified:
        raise Fail("%s: no DSSE signature verifies over PAE with the given key" % what)
    statement = strict_json(body, what + " statement")
    validate_with(SCHEMA_INTOTO, statement, what + " statement")
    if not any(s.get("digest", {}).get("sha256") == image_hex for s in statement["subject"]):
        raise Fail("%s: no subject has digest.sha256 == %s" % (what, image_hex))
    if statement["predicateType"] != annotated_type:
        raise Fail("%s: statement predicateType %r != layer annotation %r"
                   % (what, statement["predicateType"], annotated_type))
    return statement


def verify_attestations(src, image_digest, public_key, kinds):
    """cosign `.att` tag: count valid attestations per predicateType and
    require a valid, schema-conforming one for every requested kind."""
    att_tag = image_digest.replace(":", "-", 1) + ".att"
    found = src.manifest(att_tag)
    if found is None:
        raise Fail("no attestation manifest %s in %s" % (att_tag, src.describe()))
    _, media_type, body = found
    manifest = parse_oci_manifest(body, media_type, "attestation manifest " + att_tag)
    check_cosign_config(src, manifest, "attestation manifest")
    image_hex = image_digest.split(":", 1)[1]
    counts = {}
    statements = []
    problems = []
    for i, layer in enumerate(manifest["layers"]):
        if layer["mediaType"] != MT_DSSE:
            continue
        try:
            statement = verify_attestation_layer(src, layer, "att layer %d" % i, image_hex, public_key)
        except Fail as exc:
            problems.append(str(exc))
            continue
        counts[statement["predicateType"]] = counts.get(statement["predicateType"], 0) + 1
        statements.append(statement)
    for kind in kinds:
        wanted = PREDICATE_TYPES[kind]
        candidates = [s for s in statements if s["predicateType"] == wanted]
        if not candidates:
            detail = (" (invalid layers: " + "; ".join(problems) + ")") if problems else ""
            raise Fail("no valid %s attestation (predicateType %s)%s" % (kind, wanted, detail))
        schema_errors = []
        for statement in candidates:
            try:
                validate_kind(kind, statement["predicate"])
                break
            except Fail as exc:
                schema_errors.append(str(exc))
        else:
            raise Fail("%s attestation predicate invalid: %s" % (kind, "; ".join(schema_errors)))
    return counts


def cmd_verify(args):
    public_key = load_public_key(args.key)
    kinds = []
    if args.attestations is not None:
        kinds = [k.strip() for k in args.attestations.split(",") if k.strip()]
        unknown = [k for k in kinds if k not in PREDICATE_TYPES]
        if unknown or not kinds:
            raise Usage("--attestations takes a comma list of %s" % ",".join(PREDICATE_TYPES))
    if args.layout:
        if args.registry or args.repo or args.ref or not args.tag:
            raise Usage("--layout needs --tag (and no --registry/--repo/--ref)")
        src = LayoutSource(args.layout)
        ref = args.tag
    elif args.registry:
        if args.tag or not args.repo or not args.ref:
            raise Usage("--registry needs --repo and --ref (and no --tag)")
        src = RegistrySource(args.registry, args.repo)
        ref = args.ref
    else:
        raise Usage("give either --layout DIR --tag TAG or --registry URL --repo REPO --ref REF")
    found = src.manifest(ref)
    if found is None:
        raise Fail("image %r not found in %s" % (ref, src.describe()))
    image_digest = found[0]
    signatures_ok = verify_signatures(src, image_digest, public_key, args.identity)
    attestations = verify_attestations(src, image_digest, public_key, kinds) if args.attestations is not None else {}
    print(json.dumps({"digest": image_digest, "signatures_ok": signatures_ok, "attestations": attestations}))
    return 0


# ---------------------------------------------------------------------------
# genkey / decrypt / sign-blob / schema
# ---------------------------------------------------------------------------

def cmd_genkey(args):
    n = args.scrypt_n
    if n < 2 or n & (n - 1):
        raise Usage("--scrypt-n must be a power of two >= 2")
    pem_type = PEM_TYPE_COSIGN if args.pem_type == "cosign" else PEM_TYPE_SIGSTORE
    private_key = ec.generate_private_key(ec.SECP256R1())
    der = private_key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    key_pem = encrypt_cosign_key(der, password_from_env(), n, pem_type)
    key_path, pub_path = args.out + ".key", args.out + ".pub"
    try:
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key_pem)
        with open(pub_path, "wb") as fh:
            fh.write(public_pem(private_key))
    except OSError as exc:
        raise Usage("cannot write %s: %s" % (args.out, exc)) from None
    return 0


def cmd_decrypt(args):
    try:
        with open(args.key, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise Usage("cannot read %s: %s" % (args.key, exc)) from None
    private_key = decrypt_cosign_key(data, password_from_env(), args.key)
    sys.stdout.write(public_pem(private_key).decode("ascii"))
    return 0


def cmd_sign_blob(args):
    private_key = load_private_key(args.key)
    try:
        with open(getattr(args, "in"), "rb") as fh:
            payload = fh.read()
    except OSError as exc:
        raise Usage("cannot read payload: %s" % exc) from None
    print(base64.b64encode(ecdsa_sign(private_key, payload)).decode("ascii"))
    return 0


def cmd_verify_blob(args):
    """cosign verify-blob with a key: SIGFILE holds base64 of the DER ECDSA P-256
    signature over SHA-256 of FILE's exact bytes."""
    public_key = load_public_key(args.key)
    try:
        with open(args.signature, "rb") as fh:
            sig_text = fh.read().strip()
        with open(getattr(args, "in"), "rb") as fh:
            payload = fh.read()
    except OSError as exc:
        raise Usage("cannot read: %s" % exc) from None
    signature = b64_std_decode(sig_text.decode("ascii", "replace"), "signature " + args.signature)
    if not ecdsa_verify(public_key, signature, payload):
        raise Fail("the signature in %s does not verify %s" % (args.signature, getattr(args, "in")))
    print("Verified OK")
    return 0


# cosign's --type names for blob attestations (cosign options/predicate.go).
BLOB_PREDICATE_TYPES = {
    "slsaprovenance1": "https://slsa.dev/provenance/v1",
    "slsa": "https://slsa.dev/provenance/v1",
    "spdxjson": "https://spdx.dev/Document",
    "spdx": "https://spdx.dev/Document",
    "cyclonedx": "https://cyclonedx.org/bom",
}


def _envelope_texts(data, what):
    """One JSON document (an envelope, possibly pretty-printed) or JSON Lines."""
    text = data.decode("utf-8", "replace")
    try:
        json.loads(text)
        return [(what, text)]
    except ValueError:
        pass
    return [("%s line %d" % (what, n), line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def check_blob_envelope(text, what, public_key, file_hex, want_type):
    """Returns (statement, subject name); raises Fail naming what is wrong."""
    envelope = strict_json(text, what)
    if not isinstance(envelope, dict):
        raise Fail("%s: the envelope is not an object" % what)
    if envelope.get("payloadType") != DSSE_PAYLOAD_TYPE_INTOTO:
        raise Fail("%s: payloadType %r != %r" % (what, envelope.get("payloadType"), DSSE_PAYLOAD_TYPE_INTOTO))
    body = b64_std_decode(envelope.get("payload"), what + " payload")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise Fail("%s: signatures must be a non-empty array" % what)
    signed = pae(DSSE_PAYLOAD_TYPE_INTOTO, body)
    if not any(isinstance(e, dict) and ecdsa_verify(public_key, b64_std_decode(e.get("sig"), what + " sig"), signed)
               for e in signatures):
        raise Fail("%s: no DSSE signature verifies over PAE with the given key" % what)
    statement = strict_json(body, what + " statement")
    validate_with(SCHEMA_INTOTO, statement, what + " statement")
    if want_type and statement["predicateType"] != want_type:
        raise Fail("%s: predicateType %r != %r" % (what, statement["predicateType"], want_type))
    names = [s.get("name") for s in statement["subject"] if s.get("digest", {}).get("sha256") == file_hex]
    if not names:
        raise Fail("%s: no subject has digest.sha256 == %s" % (what, file_hex))
    kind = {v: k for k, v in PREDICATE_TYPES.items()}.get(statement["predicateType"])
    if kind in ("slsa", "spdx", "cyclonedx"):
        validate_kind(kind, statement["predicate"])
    return statement, names[0]


def cmd_verify_blob_attestation(args):
    """cosign verify-blob-attestation --key K --signature ATT [--type T] FILE."""
    public_key = load_public_key(args.key)
    want = args.type or ""
    if want and not want.startswith(("https://", "http://")):
        if want not in BLOB_PREDICATE_TYPES:
            raise Usage("unknown --type %r (use %s or a URI)" % (want, ", ".join(sorted(BLOB_PREDICATE_TYPES))))
        want = BLOB_PREDICATE_TYPES[want]
    try:
        with open(args.signature, "rb") as fh:
            data = fh.read()
        digest = hashlib.sha256()
        with open(getattr(args, "in"), "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise Usage("cannot read: %s" % exc) from None
    failures = []
    for what, text in _envelope_texts(data, args.signature):
        try:
            statement, name = check_blob_envelope(text, what, public_key, digest.hexdigest(), want)
        except Fail as exc:
            failures.append(str(exc))
            continue
        print("Verified OK: %s is subject %r of %s" % (getattr(args, "in"), name, statement["predicateType"]))
        return 0
    raise Fail("; ".join(failures) if failures else "%s holds no envelope" % args.signature)


def cmd_schema(args):
    try:
        with open(args.file, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise Usage("cannot read %s: %s" % (args.file, exc)) from None
    doc = strict_json(data, args.file)
    validate_kind(args.kind, doc)
    if args.schema_file:
        validator = official_schema_validator(args.schema_file)
        validate_with(None, doc, "%s (official schema %s)" % (args.kind, os.path.basename(args.schema_file)),
                      validator=validator)
    print("OK: %s" % args.kind)
    return 0


# ---------------------------------------------------------------------------
# selftest
# ---------------------------------------------------------------------------

class _Layout:
    """Builds a tiny OCI image layout for the self-test."""

    def __init__(self, root):
        self.root = root
        os.makedirs(os.path.join(root, "blobs", "sha256"), exist_ok=True)
        with open(os.path.join(root, "oci-layout"), "w") as fh:
            fh.write('{"imageLayoutVersion":"1.0.0"}')
        self.entries = []
        self.write_index()

    def put(self, data, media_type, annotations=None):
        digest = sha256_digest(data)
        with open(os.path.join(self.root, "blobs", "sha256", digest[7:]), "wb") as fh:
            fh.write(data)
        desc = {"mediaType": media_type, "digest": digest, "size": len(data)}
        if annotations:
            desc["annotations"] = annotations
        return desc

    def path(self, desc):
        return os.path.join(self.root, "blobs", "sha256", desc["digest"][7:])

    def tag(self, tag, manifest):
        body = json.dumps(manifest, separators=(",", ":")).encode()
        desc = self.put(body, MT_OCI_MANIFEST, {ANN_REF_NAME: tag})
        self.entries = [e for e in self.entries if e["annotations"][ANN_REF_NAME] != tag] + [desc]
        self.write_index()
        return desc

    def write_index(self):
        with open(os.path.join(self.root, "index.json"), "w") as fh:
            json.dump({"schemaVersion": 2, "mediaType": MT_OCI_INDEX, "manifests": self.entries}, fh)

    def cosign_manifest(self, layers):
        config = {"architecture": "", "os": "", "config": {},
                  "rootfs": {"type": "layers", "diff_ids": [layer["digest"] for layer in layers]}}
        return {"schemaVersion": 2, "mediaType": MT_OCI_MANIFEST,
                "config": self.put(json.dumps(config).encode(), MT_OCI_CONFIG), "layers": layers}


def _sample_predicates(image_hex):
    slsa = {
        "buildDefinition": {
            "buildType": "https://example.invalid/paddle-image/build/v1",
            "externalParameters": {"spec": "image.toml"},
            "resolvedDependencies": [{"uri": "pkg:pypi/numpy@1.26.4", "digest": {"sha256": "ab" * 32}}],
        },
        "runDetails": {"builder": {"id": "https://example.invalid/paddle-image"},
                       "metadata": {"startedOn": "2024-01-01T00:00:00Z", "finishedOn": "2024-01-01T00:01:00.5Z"}},
    }
    spdx = {
        "spdxVersion": "SPDX-2.3", "dataLicense": "CC0-1.0", "SPDXID": "SPDXRef-DOCUMENT",
        "name": "img", "documentNamespace": "https://example.invalid/spdx/" + image_hex,
        "creationInfo": {"created": "2024-01-01T00:00:00Z", "creators": ["Tool: paddle-image-selftest"]},
        "packages": [{"SPDXID": "SPDXRef-Package-numpy-1.26.4", "name": "numpy", "versionInfo": "1.26.4",
                      "downloadLocation": "NOASSERTION", "filesAnalyzed": False,
                      "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                                        "referenceLocator": "pkg:pypi/numpy@1.26.4"}]}],
        "relationships": [{"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
                           "relatedSpdxElement": "SPDXRef-Package-numpy-1.26.4"}],
    }
    cyclonedx = {
        "bomFormat": "CycloneDX", "specVersion": "1.5",
        "serialNumber": "urn:uuid:3e671687-395b-41f5-a30f-a58921a69b79", "version": 1,
        "components": [{"type": "library", "name": "numpy", "version": "1.26.4",
                        "purl": "pkg:pypi/numpy@1.26.4", "bom-ref": "pkg:pypi/numpy@1.26.4"}],
    }
    return {"slsa": slsa, "spdx": spdx, "cyclonedx": cyclonedx}


def _serve_layout_as_registry(root, repo):
    """A read-only distribution-spec endpoint backed by an OCI layout."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):  # keep the self-test quiet
            pass

        def do_GET(self):  # noqa: N802
            prefix = "/v2/%s/" % repo
            if not self.path.startswith(prefix):
                return self.send_error(404)
            kind, _, ref = self.path[len(prefix):].partition("/")
            with open(os.path.join(root, "index.json")) as fh:
                index = json.load(fh)
            digest = None
            if kind == "manifests":
                for desc in index["manifests"]:
                    if ref in (desc["digest"], desc.get("annotations", {}).get(ANN_REF_NAME)):
                        digest = desc["digest"]
            elif kind == "blobs":
                digest = ref
            path = os.path.join(root, "blobs", "sha256", (digest or ":").split(":", 1)[1])
            if not digest or not os.path.isfile(path):
                return self.send_error(404)
            with open(path, "rb") as fh:
                data = fh.read()
            self.send_response(200)
            self.send_header("Content-Type", MT_OCI_MANIFEST if kind == "manifests" else "application/octet-stream")
            self.send_header("Docker-Content-Digest", digest)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def cmd_selftest(_args):
    results = {"passed": 0, "failed": 0}
    me = os.path.abspath(__file__)

    def run(argv, env_password=None, expect=0):
        env = dict(os.environ)
        if env_password is not None:
            env["COSIGN_PASSWORD"] = env_password
        proc = subprocess.run([sys.executable, me] + argv, capture_output=True, env=env, timeout=300)
        if proc.returncode != expect:
            raise AssertionError("%s: exit %d (wanted %d)\nstdout: %s\nstderr: %s" % (
                " ".join(argv[:2]), proc.returncode, expect, proc.stdout.decode()[-800:], proc.stderr.decode()[-800:]))
        return proc

    def check(name, func):
        try:
            func()
            results["passed"] += 1
            print("ok - %s" % name)
        except Exception:  # pylint: disable=broad-except
            results["failed"] += 1
            print("not ok - %s\n%s" % (name, traceback.format_exc()))

    tmp = tempfile.mkdtemp(prefix="cosign_check_selftest.")
    try:
        # --- DSSE PAE golden vector (DSSE protocol.md)
        def t_pae():
            assert pae("application/vnd.in-toto+json", b"hello") == b"DSSEv1 28 application/vnd.in-toto+json 5 hello"
            assert pae("t", b"") == b"DSSEv1 1 t 0 "
            assert pae("t", "\u00e9".encode()) == b"DSSEv1 1 t 2 \xc3\xa9"  # byte counts, not characters
        check("PAE golden vector", t_pae)

        # --- genkey -> decrypt, both PEM types, wrong password, empty password
        prefix = os.path.join(tmp, "k")

        def t_genkey_decrypt():
            run(["genkey", "--out", prefix], env_password="s3cret")
            with open(prefix + ".key", "rb") as fh:
                key_pem = fh.read()
            assert key_pem.startswith(b"-----BEGIN " + PEM_TYPE_SIGSTORE.encode() + b"-----\n")
            lines = key_pem.decode().splitlines()[1:-1]
            assert all(len(line) <= 64 for line in lines) and all(len(line) == 64 for line in lines[:-1])
            body = json.loads(base64.b64decode("".join(lines)))
            assert list(body) == ["kdf", "cipher", "ciphertext"]
            assert body["kdf"]["params"] == {"N": 32768, "r": 8, "p": 1}
            assert len(base64.b64decode(body["kdf"]["salt"])) == 32
            assert len(base64.b64decode(body["cipher"]["nonce"])) == 24
            # 121..138-byte PKCS#8 DER + 16-byte Poly1305 tag, no nonce prefix.
            assert len(base64.b64decode(body["ciphertext"])) < 24 + 138
            out = run(["decrypt", "--key", prefix + ".key"], env_password="s3cret").stdout
            with open(prefix + ".pub", "rb") as fh:
                assert out == fh.read() and out.startswith(b"-----BEGIN PUBLIC KEY-----\n")
            proc = run(["decrypt", "--key", prefix + ".key"], env_password="wrong", expect=1)
            assert proc.stderr.decode().startswith("FAIL: ") and proc.stderr.decode().count("\n") == 1
            run(["genkey", "--out", prefix + "c", "--pem-type", "cosign", "--scrypt-n", "1024"], env_password="")
            with open(prefix + "c.key", "rb") as fh:
                assert fh.read().startswith(b"-----BEGIN ENCRYPTED COSIGN PRIVATE KEY-----\n")
            out = run(["decrypt", "--key", prefix + "c.key"], env_password="").stdout
            with open(prefix + "c.pub", "rb") as fh:
                assert out == fh.read()
        check("genkey -> decrypt (both PEM types, wrong password rejected)", t_genkey_decrypt)

        # --- sign-blob + local ECDSA verify
        def t_sign_blob():
            blob = os.path.join(tmp, "blob")
            with open(blob, "wb") as fh:
                fh.write(b"some payload\n")
            sig = base64.b64decode(run(["sign-blob", "--key", prefix + ".key", "--in", blob],
                                       env_password="s3cret").stdout.strip(), validate=True)
            pub = load_public_key(prefix + ".pub")
            assert ecdsa_verify(pub, sig, b"some payload\n")
            assert not ecdsa_verify(pub, sig, b"some payload!\n")
        check("sign-blob + local ECDSA verify", t_sign_blob)

        # --- verify-blob-attestation: a JSON Lines file of DSSE envelopes about files
        def t_blob_attestation():
            signer_key = ec.generate_private_key(ec.SECP256R1())
            pub = os.path.join(tmp, "att.pub")
            with open(pub, "wb") as fh:
                fh.write(public_pem(signer_key))
            blob = os.path.join(tmp, "att-blob")
            with open(blob, "wb") as fh:
                fh.write(b"release bytes\n")
            predicate = {"buildDefinition": {"buildType": "https://example.com/t", "externalParameters": {}},
                         "runDetails": {"builder": {"id": "https://example.com/b"}}}

            def envelope(statement, key=signer_key):
                body = json.dumps(statement).encode()
                sig = ecdsa_sign(key, pae(DSSE_PAYLOAD_TYPE_INTOTO, body))
                return json.dumps({"payloadType": DSSE_PAYLOAD_TYPE_INTOTO,
                                   "payload": base64.b64encode(body).decode(),
                                   "signatures": [{"keyid": "", "sig": base64.b64encode(sig).decode()}]})
            statement = {"_type": INTOTO_STATEMENT_V1, "predicateType": PREDICATE_TYPES["slsa"],
                         "subject": [{"name": "other", "digest": {"sha256": "0" * 64}},
                                     {"name": "att-blob", "digest": {"sha256": hashlib.sha256(
                                         b"release bytes\n").hexdigest()}}],
                         "predicate": predicate}
            att = os.path.join(tmp, "p.intoto.jsonl")
            with open(att, "w") as fh:
                fh.write(envelope(statement, ec.generate_private_key(ec.SECP256R1())) + "\n" + envelope(statement) + "\n")
            base = ["verify-blob-attestation", "--key", pub, "--signature", att, "--in", blob]
            assert b"'att-blob'" in run(base + ["--type", "slsaprovenance1"]).stdout
            run(base + ["--type", "spdxjson"], expect=1)
            run(base + ["--type", "nonsense"], expect=2)
            with open(blob, "ab") as fh:
                fh.write(b"tampered")
            assert b"no subject" in run(base, expect=1).stderr
        check("verify-blob-attestation: signed JSON Lines, type and subject checked", t_blob_attestation)

        # --- a layout with an image, a .sig and a .att, verified and tampered
        layout_dir = os.path.join(tmp, "layout")
        lay = _Layout(layout_dir)
        signer = ec.generate_private_key(ec.SECP256R1())
        pub_path = os.path.join(tmp, "signer.pub")
        with open(pub_path, "wb") as fh:
            fh.write(public_pem(signer))
        other_pub = os.path.join(tmp, "other.pub")
        with open(other_pub, "wb") as fh:
            fh.write(public_pem(ec.generate_private_key(ec.SECP256R1())))
        identity = "127.0.0.1:5000/test/img:v1"
        layer = lay.put(b"not really a tarball", "application/vnd.oci.image.layer.v1.tar")
        img_config = lay.put(json.dumps({"architecture": "amd64", "os": "linux",
                                         "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}).encode(),
                             MT_OCI_CONFIG)
        image = lay.tag("v1", {"schemaVersion": 2, "mediaType": MT_OCI_MANIFEST,
                               "config": img_config, "layers": [layer]})
        image_digest = image["digest"]
        image_hex = image_digest[7:]

        def payload_for(digest, ref=identity, extra=None):
            doc = {"critical": {"identity": {"docker-reference": ref},
                                "image": {"docker-manifest-digest": digest},
                                "type": SIMPLESIGNING_TYPE}, "optional": None}
            if extra:
                doc.update(extra)
            return json.dumps(doc, separators=(",", ":")).encode()

        def sig_layer(payload, key=signer):
            sig = base64.b64encode(ecdsa_sign(key, payload)).decode()
            return lay.put(payload, MT_SIMPLESIGNING, {ANN_COSIGN_SIGNATURE: sig})

        def set_sig(layers):
            lay.tag(image_digest.replace(":", "-") + ".sig", lay.cosign_manifest(layers))

        good_payload = payload_for(image_digest)
        good_layer = sig_layer(good_payload)
        set_sig([good_layer])

        predicates = _sample_predicates(image_hex)

        def att_layer(kind, predicate, subject_hex=image_hex, annotated=None, signed_body=None):
            statement = {"_type": INTOTO_STATEMENT_V1,
                         "subject": [{"name": "127.0.0.1:5000/test/img", "digest": {"sha256": subject_hex}}],
                         "predicateType": PREDICATE_TYPES[kind], "predicate": predicate}
            body = json.dumps(statement).encode()
            to_sign = body if signed_body is None else signed_body
            env = {"payloadType": DSSE_PAYLOAD_TYPE_INTOTO, "payload": base64.b64encode(body).decode(),
                   "signatures": [{"keyid": "", "sig": base64.b64encode(
                       ecdsa_sign(signer, pae(DSSE_PAYLOAD_TYPE_INTOTO, to_sign))).decode()}]}
            return lay.put(json.dumps(env).encode(), MT_DSSE,
                           {ANN_PREDICATE_TYPE: annotated or PREDICATE_TYPES[kind], ANN_COSIGN_SIGNATURE: ""})

        def set_att(layers):
            lay.tag(image_digest.replace(":", "-") + ".att", lay.cosign_manifest(layers))

        att_layers = [att_layer(kind, predicate) for kind, predicate in predicates.items()]
        set_att(att_layers)

        verify_layout = ["verify", "--key", pub_path, "--layout", layout_dir, "--tag", "v1"]

        def t_layout_ok():
            out = json.loads(run(verify_layout + ["--identity", identity]).stdout)
            assert out == {"digest": image_digest, "signatures_ok": 1, "attestations": {}}, out
            out = json.loads(run(verify_layout + ["--attestations", "slsa,spdx,cyclonedx"]).stdout)
            assert out["attestations"] == {PREDICATE_TYPES[k]: 1 for k in PREDICATE_TYPES}, out
        check("verify accepts a correctly signed layout (+ attestations)", t_layout_ok)

        def t_registry_ok():
            server = _serve_layout_as_registry(layout_dir, "test/img")
            try:
                url = "http://127.0.0.1:%d" % server.server_address[1]
                base = ["verify", "--key", pub_path, "--registry", url, "--repo", "test/img"]
                out = json.loads(run(base + ["--ref", "v1", "--attestations", "slsa,spdx,cyclonedx"]).stdout)
                assert out["digest"] == image_digest and out["signatures_ok"] == 1
                run(base + ["--ref", image_digest, "--identity", identity])
                run(base + ["--ref", "nope"], expect=1)
            finally:
                server.shutdown()
                server.server_close()
        check("verify accepts the same image served by a registry", t_registry_ok)

        def t_rejections():
            run(verify_layout + ["--identity", "127.0.0.1:5000/test/img:v2"], expect=1)
            run(["verify", "--key", other_pub, "--layout", layout_dir, "--tag", "v1"], expect=1)
            # Flip one payload byte in place: the blob no longer matches its digest.
            path = lay.path(good_layer)
            with open(path, "r+b") as fh:
                data = bytearray(fh.read())
                data[10] ^= 0x01
                fh.seek(0)
                fh.write(data)
            proc = run(verify_layout, expect=1)
            assert b"digest" in proc.stderr, proc.stderr
            with open(path, "wb") as fh:
                fh.write(good_payload)
            run(verify_layout)
            # Same flipped payload stored consistently (new digest, size,
            # diff_ids) but carrying the old signature: ECDSA must fail.
            flipped = bytearray(good_payload)
            flipped[10] ^= 0x01
            set_sig([lay.put(bytes(flipped), MT_SIMPLESIGNING, good_layer["annotations"])])
            proc = run(verify_layout, expect=1)
            assert b"signature does not verify" in proc.stderr, proc.stderr
            # Validly signed but not strictly parseable / wrong digest.
            set_sig([sig_layer(payload_for(image_digest, extra={"extra": 1}))])
            run(verify_layout, expect=1)
            set_sig([sig_layer(payload_for("sha256:" + "0" * 64))])
            run(verify_layout, expect=1)
            # A broken layer next to a good one: at least one passes.
            set_sig([sig_layer(payload_for("sha256:" + "0" * 64)), good_layer])
            assert json.loads(run(verify_layout).stdout)["signatures_ok"] == 1
            # diff_ids must mirror the layers.
            manifest = lay.cosign_manifest([good_layer])
            manifest["config"] = lay.put(json.dumps({"architecture": "", "os": "", "rootfs": {
                "type": "layers", "diff_ids": []}}).encode(), MT_OCI_CONFIG)
            lay.tag(image_digest.replace(":", "-") + ".sig", manifest)
            run(verify_layout, expect=1)
            set_sig([good_layer])
            run(verify_layout)
        check("verify rejects flipped payload, wrong key/identity, loose payloads", t_rejections)

        def t_attestation_rejections():
            with_att = verify_layout + ["--attestations", "spdx"]
            slsa_layer, spdx_layer, cdx_layer = att_layers
            cases = [
                # statement changed after signing: DSSE signature over PAE fails
                (att_layer("spdx", predicates["spdx"], signed_body=b"{}"), b"no DSSE signature verifies"),
                # subject digest is not the image
                (att_layer("spdx", predicates["spdx"], subject_hex="0" * 64), b"no subject has digest.sha256"),
                # layer annotation disagrees with the statement
                (att_layer("spdx", predicates["spdx"], annotated=PREDICATE_TYPES["slsa"]), b"!= layer annotation"),
                # validly signed, but the SBOM breaks the SPDX schema
                (att_layer("spdx", dict(predicates["spdx"], dataLicense="MIT")), b"predicate invalid"),
            ]
            for bad_layer, reason in cases:
                set_att([slsa_layer, bad_layer, cdx_layer])
                proc = run(with_att, expect=1)
                assert reason in proc.stderr, proc.stderr
                run(verify_layout + ["--attestations", "slsa,cyclonedx"])
            # an invalid layer next to a valid one of the same kind is tolerated
            set_att([cases[0][0], spdx_layer])
            assert json.loads(run(with_att).stdout)["attestations"] == {PREDICATE_TYPES["spdx"]: 1}
            set_att(att_layers)
            run(verify_layout + ["--attestations", "slsa,spdx,cyclonedx"])
        check("verify rejects tampered or invalid attestations", t_attestation_rejections)

        def t_usage():
            run(["verify", "--layout", layout_dir, "--tag", "v1"], expect=2)
            run(["verify", "--key", pub_path, "--layout", layout_dir], expect=2)
            run(verify_layout + ["--attestations", "bogus"], expect=2)
        check("usage errors exit 2", t_usage)

        def t_schema():
            for kind, predicate in predicates.items():
                path = os.path.join(tmp, kind + ".json")
                with open(path, "w") as fh:
                    json.dump(predicate, fh)
                run(["schema", "--kind", kind, path])
            bad = dict(predicates["spdx"], packages=[dict(predicates["spdx"]["packages"][0], SPDXID="pkg_1")])
            bad_cdx = dict(predicates["cyclonedx"], serialNumber="urn:uuid:" + "-" * 36)
            bad_slsa = {"buildDefinition": {"buildType": "x", "externalParameters": {}},
                        "runDetails": {"builder": {"id": "https://b"}}}
            for kind, doc in (("spdx", bad), ("cyclonedx", bad_cdx), ("slsa", bad_slsa)):
                path = os.path.join(tmp, "bad-" + kind + ".json")
                with open(path, "w") as fh:
                    json.dump(doc, fh)
                run(["schema", "--kind", kind, path], expect=1)
            # --schema-file with a local $ref to a sibling file.
            sdir = os.path.join(tmp, "schemas")
            os.makedirs(sdir)
            with open(os.path.join(sdir, "main.schema.json"), "w") as fh:
                json.dump({"$schema": "http://json-schema.org/draft-07/schema#",
                           "$id": "http://example.invalid/schema/main.schema.json",
                           "type": "object", "properties": {"bomFormat": {"$ref": "part.schema.json#/definitions/f"}}}, fh)
            with open(os.path.join(sdir, "part.schema.json"), "w") as fh:
                json.dump({"$id": "http://example.invalid/schema/part.schema.json",
                           "definitions": {"f": {"const": "CycloneDX"}}}, fh)
            run(["schema", "--kind", "cyclonedx", "--schema-file", os.path.join(sdir, "main.schema.json"),
                 os.path.join(tmp, "cyclonedx.json")])
            with open(os.path.join(sdir, "part.schema.json"), "w") as fh:
                json.dump({"$id": "http://example.invalid/schema/part.schema.json",
                           "definitions": {"f": {"const": "NotCycloneDX"}}}, fh)
            run(["schema", "--kind", "cyclonedx", "--schema-file", os.path.join(sdir, "main.schema.json"),
                 os.path.join(tmp, "cyclonedx.json")], expect=1)
        check("schema accepts good documents and rejects bad ones", t_schema)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("%d passed, %d failed" % (results["passed"], results["failed"]))
    return 0 if results["failed"] == 0 else 1


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

def build_parser():
    parser = argparse.ArgumentParser(prog="cosign_check.py",
                                     description="Independent verifier for cosign signatures/attestations.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("verify", help="verify .sig (and optionally .att) of an image")
    p.add_argument("--key", required=True, help="PKIX PEM EC P-256 public key")
    p.add_argument("--layout", help="OCI image layout directory")
    p.add_argument("--tag", help="tag (index.json org.opencontainers.image.ref.name) in --layout")
    p.add_argument("--registry", help="registry base URL, e.g. http://127.0.0.1:5000")
    p.add_argument("--repo", help="repository name in --registry")
    p.add_argument("--ref", help="tag or sha256 digest in --registry")
    p.add_argument("--identity", help="expected docker-reference (REGISTRY/REPO:TAG)")
    p.add_argument("--attestations", help="comma list of required kinds: slsa,spdx,cyclonedx")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("genkey", help="write PREFIX.key (encrypted) and PREFIX.pub")
    p.add_argument("--out", required=True)
    p.add_argument("--pem-type", choices=["sigstore", "cosign"], default="sigstore")
    p.add_argument("--scrypt-n", type=int, default=32768)
    p.set_defaults(func=cmd_genkey)

    p = sub.add_parser("decrypt", help="decrypt a cosign key and print its public key")
    p.add_argument("--key", required=True)
    p.set_defaults(func=cmd_decrypt)

    p = sub.add_parser("sign-blob", help="print a base64 DER ECDSA signature of a file")
    p.add_argument("--key", required=True)
    p.add_argument("--in", required=True, metavar="PAYLOAD")
    p.set_defaults(func=cmd_sign_blob)

    p = sub.add_parser("verify-blob", help="verify a base64 DER ECDSA signature of a file")
    p.add_argument("--key", required=True)
    p.add_argument("--signature", required=True)
    p.add_argument("--in", required=True, metavar="FILE")
    p.set_defaults(func=cmd_verify_blob)

    p = sub.add_parser("verify-blob-attestation", help="verify a DSSE in-toto attestation about a file")
    p.add_argument("--key", required=True)
    p.add_argument("--signature", required=True, metavar="ATT")
    p.add_argument("--in", required=True, metavar="FILE")
    p.add_argument("--type", help="slsaprovenance1, spdxjson, cyclonedx or a predicate URI (default: any)")
    p.set_defaults(func=cmd_verify_blob_attestation)

    p = sub.add_parser("schema", help="validate a JSON document")
    p.add_argument("--kind", required=True, choices=sorted(SCHEMAS))
    p.add_argument("--schema-file", help="also validate against this official schema (local $refs only)")
    p.add_argument("file")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("selftest", help="run the built-in self-test")
    p.set_defaults(func=cmd_selftest)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on usage errors
    try:
        return args.func(args)
    except Fail as exc:
        sys.stderr.write("FAIL: %s\n" % " ".join(str(exc).split()))
        return 1
    except Usage as exc:
        parser.print_usage(sys.stderr)
        sys.stderr.write("%s: error: %s\n" % (parser.prog, exc))
        return 2
    except jsonschema.exceptions.SchemaError as exc:
        sys.stderr.write("FAIL: schema file is not a valid JSON schema: %s\n" % " ".join(exc.message.split()))
        return 1
    except jsonschema.exceptions.RefResolutionError as exc:
        sys.stderr.write("FAIL: schema $ref could not be resolved: %s\n" % " ".join(str(exc).split()))
        return 1
    except Exception:  # pylint: disable=broad-except
        traceback.print_exc()
        sys.stderr.write("cosign_check.py: internal error (exit 3)\n")
        return 3


if __name__ == "__main__":
    sys.exit(main())
