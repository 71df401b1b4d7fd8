// SPDX-License-Identifier: Apache-2.0
// inspect_image_archive(): see image.h and docs/image-identity.md. The archive is opened once
// (O_NOFOLLOW, regular file), read front to back by scan_tar() (which hashes the archive and every
// member), and its metadata is then read back by offset from the same descriptor; each metadata
// read is re-hashed and compared with the scan, so a file rewritten between the two reads is
// caught. Two layouts are understood: the OCI image layout (oci-layout, index.json,
// blobs/sha256/<hex>) and docker-archive (manifest.json with Config and Layers), the two formats
// `podman save` writes.
#include "fingerprint/image.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "core/hex.h"
#include "core/syscall.h"
#include "fingerprint/image_json.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tar_reader.h"

namespace sealrun {
namespace {

using nlohmann::json;

constexpr size_t kMaxLayers = 1000;
constexpr int kMaxIndexNesting = 4;

struct Archive {
  int fd = -1;
  std::string what;
  std::map<std::string, const TarMember*> members;
};

struct Descriptor {
  std::string media_type;
  std::string hex;  // of "sha256:<hex>"
  uint64_t size = 0;
};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// True when the layer bytes are compressed (gzip, zstd, bzip2, xz magic), so its digest is not
// its diff id.
bool compressed(const TarMember& m) {
  std::string_view h = m.head;
  return starts_with(h, "\x1f\x8b") || starts_with(h, "\x28\xb5\x2f\xfd") ||
         starts_with(h, "BZh") ||
         starts_with(h,
                     "\xfd"
                     "7zXZ");
}

Result<std::string> digest_hex(const json& value, const std::string& what) {
  if (!value.is_string()) return Error::make(fmt::format("{}: digest is not a string", what));
  const auto& s = value.get_ref<const std::string&>();
  if (!starts_with(s, "sha256:"))
    return Error::make(
        fmt::format("{}: digest '{}' is not sha256 (the only algorithm sealrun "
                    "checks)",
                    what, s));
  std::string hex = s.substr(7);
  if (!is_sha256_hex(hex))
    return Error::make(fmt::format("{}: digest '{}' is not 64 lower-case hex digits", what, s));
  return hex;
}

Result<Descriptor> parse_descriptor(const json& d, const std::string& what) {
  if (!d.is_object()) return Error::make(fmt::format("{}: descriptor is not an object", what));
  Descriptor out;
  auto mt = d.find("mediaType");
  if (mt != d.end()) {
    if (!mt->is_string()) return Error::make(fmt::format("{}: mediaType is not a string", what));
    out.media_type = mt->get<std::string>();
  }
  auto dg = d.find("digest");
  if (dg == d.end()) return Error::make(fmt::format("{}: descriptor has no digest", what));
  out.hex = SEALRUN_TRY(digest_hex(*dg, what));
  auto sz = d.find("size");
  if (sz == d.end() || !sz->is_number_unsigned())
    return Error::make(
        fmt::format("{}: descriptor size missing or not a non-negative integer", what));
  out.size = sz->get<uint64_t>();
  return out;
}

Result<const TarMember*> find_member(const Archive& a, const std::string& raw_name,
                                     const std::string& what) {
  auto name = SEALRUN_TRY_CTX(normalize_member_name(raw_name), what);
  auto it = a.members.find(name);
  if (it == a.members.end())
    return Error::make(
        fmt::format("{}: {} references '{}', which is not in the archive", a.what, what, name));
  if (it->second->kind != TarKind::kRegular)
    return Error::make(
        fmt::format("{}: {} references '{}', which is not a regular file in the "
                    "archive",
                    a.what, what, name));
  return it->second;
}

// Reads a member's bytes back by offset and checks them against the digest of the scan.
Result<std::string> read_member(const Archive& a, const TarMember& m) {
  if (m.size > kMaxImageJsonBytes)
    return Error::make(fmt::format("{}: '{}' is {} bytes, over the metadata limit of {}", a.what,
                                   m.name, m.size, kMaxImageJsonBytes));
  std::string bytes(m.size, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = retry_eintr([&] {
      return ::pread(a.fd, bytes.data() + got, bytes.size() - got,
                     static_cast<off_t>(m.data_offset + got));
    });
    if (n < 0) return Error::from_errno(fmt::format("read {} in {}", m.name, a.what));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got != bytes.size() || sha256_hex(bytes) != m.sha256)
    return Error::make(fmt::format("{}: '{}' changed while the archive was read", a.what, m.name));
  return bytes;
}

// The blob a descriptor names must be in the archive with exactly that digest and size.
Result<const TarMember*> check_blob(const Archive& a, const Descriptor& d,
                                    const std::string& what) {
  const TarMember* m = SEALRUN_TRY(find_member(a, "blobs/sha256/" + d.hex, what));
  if (m->size != d.size)
    return Error::make(
        fmt::format("{}: size mismatch for {} blob sha256:{}: the descriptor says "
                    "{} bytes, the archive holds {}",
                    a.what, what, d.hex, d.size, m->size));
  if (m->sha256 != d.hex)
    return Error::make(
        fmt::format("{}: digest mismatch for {} blob: the descriptor says "
                    "sha256:{}, its bytes hash to sha256:{}",
                    a.what, what, d.hex, m->sha256));
  return m;
}

Result<json> read_json_member(const Archive& a, const TarMember& m) {
  auto bytes = SEALRUN_TRY(read_member(a, m));
  return parse_bounded_json(bytes, fmt::format("{}: {}", a.what, m.name));
}

Result<std::vector<std::string>> diff_ids_of(const json& config, const std::string& what) {
  if (!config.is_object()) return Error::make(fmt::format("{}: config is not an object", what));
  auto rootfs = config.find("rootfs");
  if (rootfs == config.end() || !rootfs->is_object())
    return Error::make(fmt::format("{}: config has no rootfs object", what));
  auto type = rootfs->find("type");
  if (type == rootfs->end() || *type != "layers")
    return Error::make(fmt::format("{}: config rootfs.type is not \"layers\"", what));
  auto ids = rootfs->find("diff_ids");
  if (ids == rootfs->end() || !ids->is_array())
    return Error::make(fmt::format("{}: config has no rootfs.diff_ids array", what));
  if (ids->size() > kMaxLayers)
    return Error::make(fmt::format("{}: more than {} layers", what, kMaxLayers));
  std::vector<std::string> out;
  for (const auto& id : *ids) {
    auto hex = SEALRUN_TRY(digest_hex(id, what + ": rootfs.diff_ids"));
    out.push_back("sha256:" + hex);
  }
  return out;
}

// An uncompressed layer's digest is its diff id; checking that ties the config to the layer bytes.
Status check_layer_diff_id(const Archive& a, const TarMember& layer, size_t index,
                           const std::string& diff_id) {
  if (compressed(layer)) return ok_status();
  if ("sha256:" + layer.sha256 != diff_id)
    return Error::make(
        fmt::format("{}: layer {} ('{}') hashes to sha256:{}, but the config's "
                    "diff_id is {}",
                    a.what, index, layer.name, layer.sha256, diff_id));
  return ok_status();
}

bool is_index_type(const std::string& t) {
  return t == "application/vnd.oci.image.index.v1+json" ||
         t == "application/vnd.docker.distribution.manifest.list.v2+json";
}

// Follows index.json (and nested indexes, bounded) to image manifests.
Status collect_manifests(const Archive& a, const json& index, const std::string& what, int depth,
                         std::vector<Descriptor>* out) {
  if (depth > kMaxIndexNesting)
    return Error::make(
        fmt::format("{}: image indexes nested deeper than {}", a.what, kMaxIndexNesting));
  if (!index.is_object()) return Error::make(fmt::format("{}: {} is not an object", a.what, what));
  auto manifests = index.find("manifests");
  if (manifests == index.end() || !manifests->is_array())
    return Error::make(fmt::format("{}: {} has no manifests array", a.what, what));
  if (manifests->size() > kMaxLayers)
    return Error::make(
        fmt::format("{}: {} lists more than {} manifests", a.what, what, kMaxLayers));
  for (const auto& entry : *manifests) {
    auto d = SEALRUN_TRY(parse_descriptor(entry, fmt::format("{}: {}", a.what, what)));
    const TarMember* m = SEALRUN_TRY(check_blob(a, d, what + " entry"));
    if (is_index_type(d.media_type)) {
      auto nested = SEALRUN_TRY(read_json_member(a, *m));
      SEALRUN_TRY(collect_manifests(a, nested, "index sha256:" + d.hex, depth + 1, out));
    } else {
      out->push_back(d);
    }
  }
  return ok_status();
}

Result<ImageIdentity> inspect_oci(const Archive& a) {
  auto layout = SEALRUN_TRY(read_json_member(a, *SEALRUN_TRY(find_member(a, "oci-layout",
                                                                         "the "
                                                                         "layout"))));
  if (!layout.is_object() || !layout.contains("imageLayoutVersion") ||
      !layout["imageLayoutVersion"].is_string())
    return Error::make(fmt::format("{}: oci-layout has no imageLayoutVersion", a.what));
  auto index =
      SEALRUN_TRY(read_json_member(a, *SEALRUN_TRY(find_member(a, "index.json", "the layout"))));
  std::vector<Descriptor> manifests;
  SEALRUN_TRY(collect_manifests(a, index, "index.json", 0, &manifests));
  if (manifests.size() != 1)
    return Error::make(
        fmt::format("{}: holds {} image manifests; sealrun pins exactly one image "
                    "per archive",
                    a.what, manifests.size()));
  const Descriptor& md = manifests[0];
  auto manifest = SEALRUN_TRY(read_json_member(a, *SEALRUN_TRY(check_blob(a, md, "manifest"))));
  std::string mwhat = fmt::format("{}: manifest sha256:{}", a.what, md.hex);
  if (!manifest.is_object() || !manifest.contains("config") || !manifest.contains("layers") ||
      !manifest["layers"].is_array())
    return Error::make(fmt::format("{}: has no config or no layers array", mwhat));
  auto config_d = SEALRUN_TRY(parse_descriptor(manifest["config"], mwhat + ": config"));
  const TarMember* config_m = SEALRUN_TRY(check_blob(a, config_d, "config"));
  const json& layers = manifest["layers"];
  if (layers.size() > kMaxLayers)
    return Error::make(fmt::format("{}: more than {} layers", mwhat, kMaxLayers));
  std::vector<std::pair<Descriptor, const TarMember*>> layer_blobs;
  for (size_t i = 0; i < layers.size(); ++i) {
    auto d = SEALRUN_TRY(parse_descriptor(layers[i], fmt::format("{}: layer {}", mwhat, i)));
    const TarMember* m = SEALRUN_TRY(check_blob(a, d, fmt::format("layer {}", i)));
    layer_blobs.emplace_back(d, m);
  }
  auto config = SEALRUN_TRY(read_json_member(a, *config_m));
  ImageIdentity id;
  id.format = "oci-archive";
  id.image_id = "sha256:" + config_d.hex;
  id.diff_ids = SEALRUN_TRY(diff_ids_of(config, a.what + ": config"));
  if (id.diff_ids.size() != layer_blobs.size())
    return Error::make(fmt::format("{}: the manifest lists {} layers, the config {} diff_ids",
                                   a.what, layer_blobs.size(), id.diff_ids.size()));
  for (size_t i = 0; i < layer_blobs.size(); ++i) {
    const auto& [d, m] = layer_blobs[i];
    bool gzip = d.media_type.find("+gzip") != std::string::npos;
    bool zstd = d.media_type.find("+zstd") != std::string::npos;
    if (!gzip && !zstd) SEALRUN_TRY(check_layer_diff_id(a, *m, i, id.diff_ids[i]));
    id.layers.push_back({m->data_offset, m->size, gzip ? "gzip" : zstd ? "zstd" : ""});
  }
  return id;
}

// "<hex>.json", "<hex>.tar" or "blobs/sha256/<hex>": a name that claims a digest must keep it.
std::string claimed_digest(const std::string& name, std::string_view suffix) {
  if (starts_with(name, "blobs/sha256/") && is_sha256_hex(name.substr(13))) return name.substr(13);
  if (name.size() == 64 + suffix.size() && ends_with(name, suffix) &&
      is_sha256_hex(name.substr(0, 64)))
    return name.substr(0, 64);
  return {};
}

Result<ImageIdentity> inspect_docker(const Archive& a) {
  auto manifest = SEALRUN_TRY(read_json_member(a, *SEALRUN_TRY(find_member(a, "manifest.json",
                                                                           "the "
                                                                           "layout"))));
  std::string mwhat = a.what + ": manifest.json";
  if (!manifest.is_array()) return Error::make(fmt::format("{}: is not an array", mwhat));
  if (manifest.size() != 1)
    return Error::make(
        fmt::format("{}: holds {} images; sealrun pins exactly one image per "
                    "archive",
                    mwhat, manifest.size()));
  const json& entry = manifest[0];
  if (!entry.is_object() || !entry.contains("Config") || !entry["Config"].is_string() ||
      !entry.contains("Layers") || !entry["Layers"].is_array())
    return Error::make(fmt::format("{}: the entry has no Config string or no Layers array", mwhat));
  const json& layers = entry["Layers"];
  if (layers.size() > kMaxLayers)
    return Error::make(fmt::format("{}: more than {} layers", mwhat, kMaxLayers));
  const TarMember* config_m =
      SEALRUN_TRY(find_member(a, entry["Config"].get<std::string>(), "manifest.json Config"));
  std::string claimed = claimed_digest(config_m->name, ".json");
  if (!claimed.empty() && claimed != config_m->sha256)
    return Error::make(fmt::format("{}: digest mismatch: config '{}' hashes to sha256:{}", a.what,
                                   config_m->name, config_m->sha256));
  auto config = SEALRUN_TRY(read_json_member(a, *config_m));
  ImageIdentity id;
  id.format = "docker-archive";
  id.image_id = "sha256:" + config_m->sha256;
  id.diff_ids = SEALRUN_TRY(diff_ids_of(config, a.what + ": config"));
  if (id.diff_ids.size() != layers.size())
    return Error::make(fmt::format("{}: lists {} layers, the config {} diff_ids", mwhat,
                                   layers.size(), id.diff_ids.size()));
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i].is_string())
      return Error::make(fmt::format("{}: layer {} is not a string", mwhat, i));
    const TarMember* m = SEALRUN_TRY(
        find_member(a, layers[i].get<std::string>(), fmt::format("manifest.json layer {}", i)));
    std::string layer_claim = claimed_digest(m->name, ".tar");
    if (!layer_claim.empty() && layer_claim != m->sha256)
      return Error::make(fmt::format("{}: digest mismatch: layer '{}' hashes to sha256:{}", a.what,
                                     m->name, m->sha256));
    // docker-archive has no descriptor sizes; its layers are uncompressed tars whose digest is the
    // diff id, which is what ties each layer's bytes to the config.
    if (compressed(*m))
      return Error::make(
          fmt::format("{}: layer '{}' is compressed; a docker-archive layer must "
                      "be an uncompressed tar so its diff_id can be checked",
                      a.what, m->name));
    SEALRUN_TRY(check_layer_diff_id(a, *m, i, id.diff_ids[i]));
    id.layers.push_back({m->data_offset, m->size, ""});
  }
  return id;
}

bool same_file_state(const struct stat& x, const struct stat& y) {
  return x.st_dev == y.st_dev && x.st_ino == y.st_ino && x.st_size == y.st_size &&
         x.st_mtim.tv_sec == y.st_mtim.tv_sec && x.st_mtim.tv_nsec == y.st_mtim.tv_nsec &&
         x.st_ctim.tv_sec == y.st_ctim.tv_sec && x.st_ctim.tv_nsec == y.st_ctim.tv_nsec;
}

}  // namespace

Result<ImageIdentity> inspect_image_archive(const std::string& path) {
  auto fd = open_at(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (!fd) {
    if (fd.error().err() == ELOOP)
      return Error::make(fmt::format("{}: is a symlink; give the archive itself", path));
    return std::move(fd).error().context("open image archive");
  }
  auto before = SEALRUN_TRY(fstat_fd(fd->get(), path));
  if (!S_ISREG(before.st_mode))
    return Error::make(fmt::format("{}: is not a regular file; give an image archive", path));
  auto scan = SEALRUN_TRY(scan_tar(fd->get(), path));
  auto after = SEALRUN_TRY(fstat_fd(fd->get(), path));
  if (!same_file_state(before, after) || scan.archive_bytes != static_cast<uint64_t>(after.st_size))
    return Error::make(fmt::format("{}: the archive changed while it was read", path));

  Archive a;
  a.fd = fd->get();
  a.what = path;
  for (const auto& m : scan.members) {
    auto [it, fresh] = a.members.emplace(m.name, &m);
    bool both_dirs = it->second->kind == TarKind::kDirectory && m.kind == TarKind::kDirectory;
    if (!fresh && !both_dirs)
      return Error::make(
          fmt::format("{}: member '{}' appears more than once; refusing an "
                      "ambiguous archive",
                      path, m.name));
  }
  Result<ImageIdentity> id = Error::make("");
  if (a.members.count("oci-layout") != 0 && a.members.count("index.json") != 0) {
    id = inspect_oci(a);
  } else if (a.members.count("manifest.json") != 0) {
    id = inspect_docker(a);
  } else {
    return Error::make(
        fmt::format("{}: neither an OCI layout (oci-layout + index.json) nor a "
                    "docker-archive (manifest.json)",
                    path));
  }
  if (!id.ok()) return std::move(id).error();
  id->archive_sha256 = scan.archive_sha256;
  // The metadata reads went by offset; a file rewritten since the scan must not pass.
  auto last = SEALRUN_TRY(fstat_fd(fd->get(), path));
  if (!same_file_state(before, last))
    return Error::make(fmt::format("{}: the archive changed while it was read", path));
  return id;
}

}  // namespace sealrun
