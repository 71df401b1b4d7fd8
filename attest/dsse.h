// DSSE envelopes (github.com/secure-systems-lab/dsse, protocol v1.0.0): the Pre-Authentication
// Encoding, signing a payload into an envelope, and reading an envelope someone else wrote —
// strictly and within fixed bounds — then verifying it against one public key.
//
//   PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
//   envelope        = {"payloadType", "payload": base64(body), "signatures": [{"keyid", "sig"}]}
//
// sealrun signs with exactly one key, so verification refuses an envelope with no signature or
// with more than one (which signature would the verdict be about?) rather than picking one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attest/keys.h"
#include "core/result.h"

namespace sealrun::attest {

inline constexpr char kReceiptPayloadType[] = "application/vnd.sealrun.receipt+json";
inline constexpr char kInTotoPayloadType[] = "application/vnd.in-toto+json";
// The envelope of results/<id>/receipt.json is results/<id>/receipt.dsse.json.
inline constexpr char kReceiptEnvelopeFile[] = "receipt.dsse.json";

// An envelope file is at most this big; larger ones are refused from their size, unread.
inline constexpr size_t kMaxEnvelopeBytes = 16 * 1024 * 1024;
// A payload decodes to at most this many bytes: a receipt is at most 1 MiB (docs/contract.md); the
// margin covers an exported statement, which carries the receipt's outputs and admission.
inline constexpr size_t kMaxPayloadBytes = 4 * 1024 * 1024;
inline constexpr size_t kMaxSignatures = 16;    // parsed (and then refused unless exactly one)
inline constexpr size_t kMaxKeyIdBytes = 1024;  // an unauthenticated hint: kept short

// Exact bytes of DSSE's PAE.
std::string pae(std::string_view payload_type, std::string_view payload);

struct EnvelopeSignature {
  std::string keyid;  // "" when the envelope has none
  std::string sig;    // decoded bytes
};

struct Envelope {
  std::string payload_type;
  std::string payload;  // decoded bytes
  std::vector<EnvelopeSignature> signatures;
};

// Signs `payload` with `key` and returns the envelope as JSON text (keys sorted, two-space
// indent, one trailing newline), with the key's id as `keyid`.
Result<std::string> sign_envelope(const SigningKey& key, std::string_view payload_type,
                                  std::string_view payload);

// Parses envelope JSON strictly: exactly the keys payloadType, payload, signatures (and keyid,
// sig in each signature); no duplicate keys; base64 per base64.h; payload ≤ kMaxPayloadBytes;
// 0..kMaxSignatures signatures. Errors start with `name`.
Result<Envelope> parse_envelope(std::string_view json_text, std::string_view name);

// Reads and parses an envelope file below `dirfd` (AT_FDCWD: a path of the user's): a regular
// file, not a symlink as its last component, at most kMaxEnvelopeBytes — a 1 GiB file is refused
// from fstat without reading it.
Result<Envelope> read_envelope_file(int dirfd, const std::string& path);

struct VerifiedPayload {
  std::string payload_type;
  std::string payload;
  std::string key_id;  // the verifying key's id
};

// Verifies `envelope` with `key`: exactly one signature; its keyid, when present, must be `key`'s
// id; the signature must verify over PAE(payloadType, payload); and when `expected_type` is not
// empty, payloadType must equal it. Only a payload that passed every check is returned.
Result<VerifiedPayload> verify_envelope(const Envelope& envelope, const PublicKey& key,
                                        std::string_view expected_type);

// A receipt's envelope: the receipt file's exact bytes signed with the receipt payload type.
Result<std::string> sign_receipt(const SigningKey& key, std::string_view receipt_bytes);

// `receipt verify --key`: verify_envelope() with the receipt payload type, and the payload must be
// byte for byte `receipt_bytes` (the receipt file next to the envelope) — a valid envelope of some
// other receipt proves nothing about this one.
Result<VerifiedPayload> verify_receipt_envelope(const Envelope& envelope, const PublicKey& key,
                                                std::string_view receipt_bytes);

}  // namespace sealrun::attest
