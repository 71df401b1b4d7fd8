// SPDX-License-Identifier: Apache-2.0
// Admission pins to ResourceDescriptors: see inputs.h and docs/build-type.md.
#include "attest/inputs.h"

#include <fmt/format.h>

#include "core/hex.h"
#include "core/strict_json.h"

namespace sealrun::attest {
namespace {

using nlohmann::json;

bool is_hex_of(std::string_view s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// git object ids: SHA-1 (40) or SHA-256 (64) repositories.
bool is_git_id(std::string_view s) { return is_hex_of(s, 40) || is_hex_of(s, 64); }

bool is_image_digest(std::string_view s) {
  return s.substr(0, 7) == "sha256:" && is_sha256_hex(s.substr(7));
}

Status check_path(const std::string& path, const std::string& what) {
  if (path.empty() || path[0] != '/' || path.find('\0') != std::string::npos)
    return Error::make(
        fmt::format("{}: \"{}\" is not an absolute path", what, printable_text(path, 200)));
  return ok_status();
}

Status check(bool ok, const std::string& what, std::string_view value, const char* form) {
  if (ok) return ok_status();
  return Error::make(fmt::format("{}: \"{}\" is not {}", what, printable_text(value, 100), form));
}

json descriptor(std::string name, std::string uri, json digest, json annotations) {
  return {{"name", std::move(name)},
          {"uri", std::move(uri)},
          {"digest", std::move(digest)},
          {"annotations", std::move(annotations)}};
}

Result<json> source_inputs(const SourcePin& s) {
  SEALRUN_TRY(check_path(s.path, "source.path"));
  SEALRUN_TRY(check(is_sha256_hex(s.manifest_sha256), "source.manifest_sha256", s.manifest_sha256,
                    "64 lower-case hex digits"));
  json annotations = {{"kind", "source"}, {"source_kind", s.kind}, {"job_path", s.job_path}};
  // The timestamps the job saw: one time for every entry, or the host's, pinned by their digest.
  if (s.mtimes == "fixed") {
    annotations["mtimes"] = "fixed";
    annotations["mtime_epoch"] = s.mtime_epoch;
  } else if (s.mtimes == "preserved") {
    SEALRUN_TRY(check(is_sha256_hex(s.mtimes_sha256), "source.mtimes_sha256", s.mtimes_sha256,
                      "64 lower-case hex digits"));
    annotations["mtimes"] = "preserved";
  } else if (!s.mtimes.empty()) {
    return Error::make(fmt::format("source.mtimes: \"{}\" is not fixed or preserved",
                                   printable_text(s.mtimes, 40)));
  }
  json out = json::array();
  if (s.kind == "tree") {
    json digest = {{kSourceManifestDigestKey, s.manifest_sha256}};
    if (s.mtimes == "preserved") digest[kSourceMtimesDigestKey] = s.mtimes_sha256;
    out.push_back(descriptor("source", file_uri(s.path), std::move(digest), annotations));
    return out;
  }
  if (s.kind != "git" && s.kind != "bundle")
    return Error::make(
        fmt::format("source.kind: \"{}\" is not git, bundle or tree", printable_text(s.kind, 40)));
  SEALRUN_TRY(check(is_git_id(s.commit), "source.commit", s.commit, "a git object id"));
  SEALRUN_TRY(check(is_git_id(s.tree), "source.tree", s.tree, "a git object id"));
  // SPDX download-location style, as SLSA recommends: the repository (or bundle) at the commit.
  out.push_back(descriptor(
      "source", "git+" + file_uri(s.path) + "@" + s.commit,
      {{"gitCommit", s.commit}, {"gitTree", s.tree}, {kSourceManifestDigestKey, s.manifest_sha256}},
      annotations));
  if (s.kind == "bundle") {
    SEALRUN_TRY(check(is_sha256_hex(s.path_sha256), "source.path_sha256", s.path_sha256,
                      "64 lower-case hex digits"));
    // The bundle file is an input in its own right: its bytes are what was verified.
    out.push_back(descriptor("source-bundle", file_uri(s.path), {{"sha256", s.path_sha256}},
                             {{"kind", "source"}, {"source_kind", "bundle-file"}}));
  }
  return out;
}

Result<json> tree_input(const TreePin& t, const char* kind, size_t index) {
  std::string what = fmt::format("{}s[{}]", kind, index);
  SEALRUN_TRY(check_path(t.host_path, what + ".host_path"));
  SEALRUN_TRY(check_path(t.job_path, what + ".job_path"));
  SEALRUN_TRY(check(is_sha256_hex(t.tree_sha256), what + ".tree_sha256", t.tree_sha256,
                    "64 lower-case hex digits"));
  return descriptor(fmt::format("{}:{}", kind, t.job_path), file_uri(t.host_path),
                    {{kSemanticTreeDigestKey, t.tree_sha256}},
                    {{"kind", kind}, {"job_path", t.job_path}});
}

Result<json> file_input(const FilePin& f, const char* kind, const char* list, size_t index) {
  std::string what = fmt::format("{}[{}]", list, index);
  SEALRUN_TRY(check_path(f.path, what + ".path"));
  SEALRUN_TRY(
      check(is_sha256_hex(f.sha256), what + ".sha256", f.sha256, "64 lower-case hex digits"));
  return descriptor(fmt::format("{}:{}", kind, f.path), file_uri(f.path), {{"sha256", f.sha256}},
                    {{"kind", kind}});
}

Result<json> image_input(const ImagePin& i) {
  SEALRUN_TRY(check_path(i.archive, "image.archive"));
  SEALRUN_TRY(check(is_sha256_hex(i.archive_sha256), "image.archive_sha256", i.archive_sha256,
                    "64 lower-case hex digits"));
  SEALRUN_TRY(check(is_image_digest(i.image_id), "image.image_id", i.image_id, "sha256:<64 hex>"));
  for (size_t k = 0; k < i.diff_ids.size(); ++k)
    SEALRUN_TRY(check(is_image_digest(i.diff_ids[k]), fmt::format("image.diff_ids[{}]", k),
                      i.diff_ids[k], "sha256:<64 hex>"));
  // The archive's bytes are the verified artifact; the image id and layer ids it was found to
  // hold are recorded beside it (they are checked against the archive, not separate inputs).
  return descriptor("image", file_uri(i.archive), {{"sha256", i.archive_sha256}},
                    {{"kind", "image"}, {"image_id", i.image_id}, {"diff_ids", i.diff_ids}});
}

// in-toto's DigestSet algorithms with a fixed hex length; others are checked for hex only.
size_t known_digest_length(std::string_view alg) {
  if (alg == "sha256" || alg == "sha512_256" || alg == "sha3_256" || alg == "blake2s" ||
      alg == kSemanticTreeDigestKey || alg == kSourceManifestDigestKey ||
      alg == kSourceMtimesDigestKey)
    return 64;
  if (alg == "sha224" || alg == "sha512_224" || alg == "sha3_224") return 56;
  if (alg == "sha384" || alg == "sha3_384") return 96;
  if (alg == "sha512" || alg == "sha3_512" || alg == "blake2b") return 128;
  if (alg == "sha1" || alg == "ripemd160") return 40;
  if (alg == "md5") return 32;
  return 0;
}

}  // namespace

std::string file_uri(std::string_view absolute_path) {
  std::string out = "file://";
  for (char ch : absolute_path) {
    auto c = static_cast<unsigned char>(ch);
    bool literal = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    if (literal)
      out += ch;
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

Result<json> inputs_from_pins(const AdmissionPins& pins) {
  json out = json::array();
  if (pins.source)
    for (auto& d : SEALRUN_TRY(source_inputs(*pins.source))) out.push_back(std::move(d));
  for (size_t i = 0; i < pins.toolchains.size(); ++i)
    out.push_back(SEALRUN_TRY(tree_input(pins.toolchains[i], "toolchain", i)));
  for (size_t i = 0; i < pins.trees.size(); ++i)
    out.push_back(SEALRUN_TRY(tree_input(pins.trees[i], "tree", i)));
  if (pins.image) out.push_back(SEALRUN_TRY(image_input(*pins.image)));
  for (size_t i = 0; i < pins.host_tools.size(); ++i)
    out.push_back(SEALRUN_TRY(file_input(pins.host_tools[i], "host_tool", "host_tools", i)));
  for (size_t i = 0; i < pins.closure.size(); ++i)
    out.push_back(SEALRUN_TRY(file_input(pins.closure[i], "closure", "host_files", i)));
  return out;
}

Status check_input_descriptor(const json& d, const std::string& where) {
  if (!d.is_object()) return Error::make(where + ": expected an object");
  auto uri = d.find("uri");
  if (uri == d.end() || !uri->is_string() || uri->get_ref<const std::string&>().empty())
    return Error::make(where + ": no uri (every resolved dependency needs a uri and a digest)");
  auto digest = d.find("digest");
  if (digest == d.end() || !digest->is_object() || digest->empty())
    return Error::make(where + ": no digest (every resolved dependency needs a uri and a digest)");
  for (const auto& [alg, value] : digest->items()) {
    if (!value.is_string())
      return Error::make(fmt::format("{}.digest.{}: expected a string", where, alg));
    const auto& hex = value.get_ref<const std::string&>();
    size_t len = known_digest_length(alg);
    bool ok = alg == "gitCommit" || alg == "gitTree" || alg == "gitBlob" || alg == "gitTag"
                  ? is_git_id(hex)
                  : (len == 0 ? !hex.empty() : is_hex_of(hex, len));
    if (!ok)
      return Error::make(fmt::format("{}.digest.{}: \"{}\" is not a valid digest", where,
                                     printable_text(alg, 40), printable_text(hex, 80)));
  }
  if (d.contains("name") && !d["name"].is_string())
    return Error::make(where + ".name: expected a string");
  if (d.contains("annotations") && !d["annotations"].is_object())
    return Error::make(where + ".annotations: expected an object");
  return ok_status();
}

}  // namespace sealrun::attest
