// SPDX-License-Identifier: Apache-2.0
// DSSE envelopes: see dsse.h.
#include "attest/dsse.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "attest/base64.h"
#include "core/bounded_file.h"
#include "core/strict_json.h"

namespace sealrun::attest {
namespace {

using nlohmann::json;

constexpr size_t kMaxPayloadTypeBytes = 256;

// The one string member `key` of `obj`, or an error naming it.
Result<std::string> string_member(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return Error::make(fmt::format("{}: missing \"{}\"", where, key));
  if (!it->is_string())
    return Error::make(
        fmt::format("{}.{}: expected a string, got {}", where, key, it->type_name()));
  return it->get<std::string>();
}

Status only_keys(const json& obj, std::initializer_list<const char*> allowed,
                 const std::string& where) {
  for (const auto& [key, value] : obj.items()) {
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known)
      return Error::make(
          fmt::format("{}: unknown key \"{}\" (a DSSE envelope has payloadType, payload and "
                      "signatures[{{keyid, sig}}])",
                      where, printable_text(key, 64)));
  }
  return ok_status();
}

}  // namespace

std::string pae(std::string_view payload_type, std::string_view payload) {
  std::string out = fmt::format("DSSEv1 {} ", payload_type.size());
  out.append(payload_type);
  out += fmt::format(" {} ", payload.size());
  out.append(payload);
  return out;
}

Result<std::string> sign_envelope(const SigningKey& key, std::string_view payload_type,
                                  std::string_view payload) {
  if (payload.size() > kMaxPayloadBytes)
    return Error::make(fmt::format("the payload is {} bytes, over the envelope limit of {} bytes",
                                   payload.size(), kMaxPayloadBytes));
  auto sig = SEALRUN_TRY(key.sign(pae(payload_type, payload)));
  json envelope = {
      {"payloadType", payload_type},
      {"payload", base64_encode(payload)},
      {"signatures", json::array({{{"keyid", key.key_id()}, {"sig", base64_encode(sig)}}})},
  };
  return envelope.dump(2) + "\n";
}

Result<Envelope> parse_envelope(std::string_view json_text, std::string_view name) {
  std::string where(name);
  if (json_text.size() > kMaxEnvelopeBytes)
    return Error::make(fmt::format("{}: is {} bytes, over the limit of {} bytes", where,
                                   json_text.size(), kMaxEnvelopeBytes));
  // Depth 4 is all an envelope needs (object > signatures > signature > string).
  auto doc = parse_strict_json(json_text, 4, kMaxEnvelopeBytes);
  if (!doc) return std::move(doc).error().context(where + ": not a DSSE envelope");
  if (!doc->is_object())
    return Error::make(fmt::format("{}: not a DSSE envelope (the JSON is not an object)", where));
  SEALRUN_TRY(only_keys(*doc, {"payloadType", "payload", "signatures"}, where));
  Envelope out;
  out.payload_type = SEALRUN_TRY(string_member(*doc, "payloadType", where));
  if (out.payload_type.empty() || out.payload_type.size() > kMaxPayloadTypeBytes)
    return Error::make(
        fmt::format("{}.payloadType: must be 1 to {} bytes", where, kMaxPayloadTypeBytes));
  auto payload_b64 = SEALRUN_TRY(string_member(*doc, "payload", where));
  out.payload = SEALRUN_TRY(base64_decode(payload_b64, kMaxPayloadBytes, where + ".payload"));
  auto sigs = doc->find("signatures");
  if (sigs == doc->end()) return Error::make(fmt::format("{}: missing \"signatures\"", where));
  if (!sigs->is_array())
    return Error::make(
        fmt::format("{}.signatures: expected an array, got {}", where, sigs->type_name()));
  if (sigs->size() > kMaxSignatures)
    return Error::make(fmt::format("{}.signatures: {} signatures, over the limit of {}", where,
                                   sigs->size(), kMaxSignatures));
  for (size_t i = 0; i < sigs->size(); ++i) {
    const json& s = (*sigs)[i];
    std::string at = fmt::format("{}.signatures[{}]", where, i);
    if (!s.is_object()) return Error::make(fmt::format("{}: expected an object", at));
    SEALRUN_TRY(only_keys(s, {"keyid", "sig"}, at));
    EnvelopeSignature sig;
    if (s.contains("keyid")) {
      sig.keyid = SEALRUN_TRY(string_member(s, "keyid", at));
      if (sig.keyid.size() > kMaxKeyIdBytes)
        return Error::make(fmt::format("{}.keyid: over {} bytes", at, kMaxKeyIdBytes));
    }
    auto sig_b64 = SEALRUN_TRY(string_member(s, "sig", at));
    // Ed25519 signatures are 64 bytes; other schemes are bigger, but none near 4 KiB.
    sig.sig = SEALRUN_TRY(base64_decode(sig_b64, 4096, at + ".sig"));
    out.signatures.push_back(std::move(sig));
  }
  return out;
}

Result<Envelope> read_envelope_file(int dirfd, const std::string& path) {
  auto bytes = read_bounded_file(dirfd, path, kMaxEnvelopeBytes);
  if (!bytes) return std::move(bytes).error().context("envelope");
  return parse_envelope(*bytes, "envelope " + path);
}

Result<VerifiedPayload> verify_envelope(const Envelope& envelope, const PublicKey& key,
                                        std::string_view expected_type) {
  if (envelope.signatures.empty())
    return Error::make("the envelope has no signature: nothing vouches for its payload");
  if (envelope.signatures.size() > 1)
    return Error::make(fmt::format(
        "the envelope has {} signatures; sealrun signs with one key and verifies exactly one",
        envelope.signatures.size()));
  if (!expected_type.empty() && envelope.payload_type != expected_type)
    return Error::make(fmt::format("the envelope's payloadType is \"{}\"; expected \"{}\"",
                                   printable_text(envelope.payload_type, 256), expected_type));
  const EnvelopeSignature& sig = envelope.signatures.front();
  // The keyid is an unauthenticated hint (DSSE): a mismatch is reported because it says the
  // envelope was made with another key, but a match proves nothing until the signature verifies.
  if (!sig.keyid.empty() && sig.keyid != key.key_id())
    return Error::make(fmt::format("the envelope was signed by key {}, not by the given key {}",
                                   printable_text(sig.keyid, 128), key.key_id()));
  SEALRUN_TRY(key.verify(pae(envelope.payload_type, envelope.payload), sig.sig));
  return VerifiedPayload{envelope.payload_type, envelope.payload, key.key_id()};
}

Result<std::string> sign_receipt(const SigningKey& key, std::string_view receipt_bytes) {
  return sign_envelope(key, kReceiptPayloadType, receipt_bytes);
}

Result<VerifiedPayload> verify_receipt_envelope(const Envelope& envelope, const PublicKey& key,
                                                std::string_view receipt_bytes) {
  auto verified = SEALRUN_TRY(verify_envelope(envelope, key, kReceiptPayloadType));
  if (verified.payload != receipt_bytes) {
    size_t at = 0;
    while (at < verified.payload.size() && at < receipt_bytes.size() &&
           verified.payload[at] == receipt_bytes[at])
      ++at;
    return Error::make(fmt::format(
        "the envelope verifies, but its payload is not this receipt ({} bytes signed, {} bytes in "
        "the receipt file, first difference at byte {}): the receipt was changed after signing",
        verified.payload.size(), receipt_bytes.size(), at));
  }
  return verified;
}

}  // namespace sealrun::attest
