#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks an in-toto Statement v1 carrying SLSA provenance v1, field by field, from the specs.

Usage: check_statement.py STATEMENT.json [--require-uri-and-digest]

Written from the specification texts, not from sealrun's code:
  in-toto Statement v1      github.com/in-toto/attestation spec/v1/statement.md
  ResourceDescriptor        spec/v1/resource_descriptor.md ("MUST specify one of uri, digest or
                            content")
  DigestSet                 spec/v1/digest_set.md (lower-case hex; lengths of named algorithms)
  TypeURI / ResourceURI /   spec/v1/field_types.md (RFC 3986, scheme and authority lower-case;
  Timestamp                 RFC 3339 in UTC, "Z")
  SLSA provenance v1        slsa.dev/spec/v1.0/provenance (buildDefinition{buildType,
                            externalParameters, internalParameters, resolvedDependencies},
                            runDetails{builder{id, version, builderDependencies}, metadata,
                            byproducts}; extension fields are "<vendor>_<name>")
--require-uri-and-digest adds sealrun's issue 11 rule: every resolved dependency has both.

Exit 0 when valid; 1 with every problem found on stderr otherwise.
"""
import json
import re
import sys
from urllib.parse import urlsplit

problems = []

HEX_LENGTHS = {
    "sha256": 64, "sha224": 56, "sha384": 96, "sha512": 128, "sha512_224": 56,
    "sha512_256": 64, "sha3_224": 56, "sha3_256": 64, "sha3_384": 96, "sha3_512": 128,
    "blake2b": 128, "blake2s": 64, "ripemd160": 40, "sha1": 40, "md5": 32,
}
GIT = {"gitCommit", "gitTree", "gitBlob", "gitTag"}
HEX = re.compile(r"^[0-9a-f]+$")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


def problem(where, what):
    problems.append(f"{where}: {what}")


def check_uri(value, where):
    if not isinstance(value, str) or not value:
        return problem(where, "expected a non-empty URI string")
    if any(c in value for c in " \t\r\n\"<>\\^`{|}") or any(ord(c) > 126 for c in value):
        problem(where, f"{value!r} has characters a URI cannot hold unencoded")
    parts = urlsplit(value)
    if not parts.scheme or not SCHEME.match(parts.scheme):
        problem(where, f"{value!r} has no lower-case scheme")
    if parts.netloc != parts.netloc.lower():
        problem(where, f"{value!r}: the authority must be lower-case")
    if re.search(r"%(?![0-9A-Fa-f]{2})", value):
        problem(where, f"{value!r}: a '%' that is not a percent-encoding")


def check_digest_set(digest, where):
    if not isinstance(digest, dict) or not digest:
        return problem(where, "a DigestSet is a non-empty object")
    for alg, value in digest.items():
        if not isinstance(value, str):
            problem(f"{where}.{alg}", "expected a string")
        elif alg in HEX_LENGTHS:
            if not HEX.match(value) or len(value) != HEX_LENGTHS[alg]:
                problem(f"{where}.{alg}", f"expected {HEX_LENGTHS[alg]} lower-case hex digits")
        elif alg in GIT:
            if not HEX.match(value) or len(value) not in (40, 64):
                problem(f"{where}.{alg}", "expected 40 or 64 lower-case hex digits")
        elif not value:
            problem(f"{where}.{alg}", "empty digest value")


def check_descriptor(rd, where, require_digest=False, require_uri_and_digest=False):
    if not isinstance(rd, dict):
        return problem(where, "a ResourceDescriptor is an object")
    if not any(k in rd for k in ("uri", "digest", "content")):
        problem(where, "MUST specify one of uri, digest or content")
    if require_digest and "digest" not in rd:
        problem(where, "a subject MUST have digest set")
    if require_uri_and_digest and not ("uri" in rd and "digest" in rd):
        problem(where, "needs both uri and digest (issue 11)")
    if "name" in rd and not isinstance(rd["name"], str):
        problem(f"{where}.name", "expected a string")
    for key in ("uri", "downloadLocation"):
        if key in rd:
            check_uri(rd[key], f"{where}.{key}")
    if "digest" in rd:
        check_digest_set(rd["digest"], f"{where}.digest")
    if "mediaType" in rd and not isinstance(rd["mediaType"], str):
        problem(f"{where}.mediaType", "expected a string")
    if "annotations" in rd and not isinstance(rd["annotations"], dict):
        problem(f"{where}.annotations", "expected an object")


def check_known_fields(obj, known, where):
    # SLSA: fields it does not define are extension fields, named "<vendor>_<name>".
    for key in obj:
        if key not in known and "_" not in key:
            problem(f"{where}.{key}", "neither a SLSA field nor a <vendor>_<name> extension")


def check_descriptor_list(value, where, **kw):
    if not isinstance(value, list):
        return problem(where, "expected an array of ResourceDescriptors")
    for i, rd in enumerate(value):
        check_descriptor(rd, f"{where}[{i}]", **kw)


def check_provenance(p, require_uri_and_digest):
    if not isinstance(p, dict):
        return problem("predicate", "expected an object")
    check_known_fields(p, {"buildDefinition", "runDetails"}, "predicate")
    bd = p.get("buildDefinition")
    if not isinstance(bd, dict):
        problem("predicate.buildDefinition", "required object missing")
    else:
        check_known_fields(bd, {"buildType", "externalParameters", "internalParameters",
                                "resolvedDependencies"}, "predicate.buildDefinition")
        check_uri(bd.get("buildType"), "predicate.buildDefinition.buildType")
        if not isinstance(bd.get("externalParameters"), dict):
            problem("predicate.buildDefinition.externalParameters", "required object missing")
        if "internalParameters" in bd and not isinstance(bd["internalParameters"], dict):
            problem("predicate.buildDefinition.internalParameters", "expected an object")
        ext, internal = bd.get("externalParameters") or {}, bd.get("internalParameters") or {}
        for shared in set(ext) & set(internal):
            problem("predicate.buildDefinition", f"{shared!r} is both an external and an "
                    "internal parameter (SHOULD NOT)")
        if "resolvedDependencies" in bd:
            check_descriptor_list(bd["resolvedDependencies"],
                                  "predicate.buildDefinition.resolvedDependencies",
                                  require_uri_and_digest=require_uri_and_digest)
        elif require_uri_and_digest:
            problem("predicate.buildDefinition.resolvedDependencies", "missing")
    rd = p.get("runDetails")
    if not isinstance(rd, dict):
        return problem("predicate.runDetails", "required object missing")
    check_known_fields(rd, {"builder", "metadata", "byproducts"}, "predicate.runDetails")
    builder = rd.get("builder")
    if not isinstance(builder, dict):
        problem("predicate.runDetails.builder", "required object missing")
    else:
        check_known_fields(builder, {"id", "version", "builderDependencies"},
                           "predicate.runDetails.builder")
        check_uri(builder.get("id"), "predicate.runDetails.builder.id")
        version = builder.get("version", {})
        if not isinstance(version, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in version.items()):
            problem("predicate.runDetails.builder.version", "expected a map of string to string")
        if "builderDependencies" in builder:
            check_descriptor_list(builder["builderDependencies"],
                                  "predicate.runDetails.builder.builderDependencies")
    md = rd.get("metadata")
    if md is not None:
        if not isinstance(md, dict):
            problem("predicate.runDetails.metadata", "expected an object")
        else:
            check_known_fields(md, {"invocationId", "startedOn", "finishedOn"},
                               "predicate.runDetails.metadata")
            if "invocationId" in md and not isinstance(md["invocationId"], str):
                problem("predicate.runDetails.metadata.invocationId", "expected a string")
            for key in ("startedOn", "finishedOn"):
                if key in md and (not isinstance(md[key], str) or
                                  not TIMESTAMP.match(md[key])):
                    problem(f"predicate.runDetails.metadata.{key}",
                            "expected an RFC 3339 timestamp in UTC ('Z')")
    if "byproducts" in rd:
        check_descriptor_list(rd["byproducts"], "predicate.runDetails.byproducts")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        s = json.load(f)
    require = "--require-uri-and-digest" in argv[2:]
    if not isinstance(s, dict):
        problem("statement", "expected an object")
    else:
        if s.get("_type") != "https://in-toto.io/Statement/v1":
            problem("_type", "must be https://in-toto.io/Statement/v1")
        subjects = s.get("subject")
        if not isinstance(subjects, list) or not subjects:
            problem("subject", "a non-empty array is required")
        else:
            check_descriptor_list(subjects, "subject", require_digest=True)
            names = [d.get("name") for d in subjects if isinstance(d, dict) and "name" in d]
            if len(names) != len(set(names)):
                problem("subject", "names SHOULD be unique")
        check_uri(s.get("predicateType"), "predicateType")
        if s.get("predicateType") == "https://slsa.dev/provenance/v1":
            check_provenance(s.get("predicate"), require)
        elif "predicate" in s and not isinstance(s["predicate"], dict):
            problem("predicate", "expected an object")
    if problems:
        for p in problems:
            print(f"check_statement: {p}", file=sys.stderr)
        return 1
    print("valid in-toto Statement v1 / SLSA provenance v1")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
