// SPDX-License-Identifier: Apache-2.0
// Test helper: writes ustar archives byte by byte, so tests can build good image archives and
// precisely broken ones (wrong digests, wrong sizes, hostile names, truncation) without a tool
// that would refuse to write them.
#pragma once

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fingerprint/sha256.h"

namespace sealrun::testing {

inline std::string tar_header(const std::string& name, size_t size, char type = '0',
                              const std::string& link = "") {
  std::string h(512, '\0');
  std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(h.data() + 100, 8, "%07o", type == '5' ? 0755 : 0644);
  std::snprintf(h.data() + 108, 8, "%07o", 0);
  std::snprintf(h.data() + 116, 8, "%07o", 0);
  std::snprintf(h.data() + 124, 12, "%011zo", size);
  std::snprintf(h.data() + 136, 12, "%011o", 0);
  h[156] = type;
  std::memcpy(h.data() + 157, link.data(), std::min<size_t>(link.size(), 100));
  std::memcpy(h.data() + 257,
              "ustar\0"
              "00",
              8);
  std::memset(h.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h.data() + 148, 8, "%06o", sum);
  return h;
}

inline std::string tar_entry(const std::string& name, const std::string& data, char type = '0') {
  std::string out = tar_header(name, type == '0' ? data.size() : 0, type, type == '0' ? "" : data);
  if (type == '0') {
    out += data;
    out.append((512 - data.size() % 512) % 512, '\0');
  }
  return out;
}

inline std::string tar_end() { return std::string(1024, '\0'); }

struct Member {
  std::string name;
  std::string data;
};

inline std::string make_tar(const std::vector<Member>& members) {
  std::string out;
  for (const auto& m : members) out += tar_entry(m.name, m.data);
  return out + tar_end();
}

// A small OCI image: one uncompressed layer (by default holding /hello). Tests edit `members` to
// break it, or pass a layer of their own.
struct OciImage {
  std::string layer, config, manifest, index;
  std::string layer_hex, config_hex, manifest_hex;
  std::vector<Member> members;
};

inline std::string descriptor_json(const std::string& type, const std::string& hex, size_t size) {
  return nlohmann::json{{"mediaType", type}, {"digest", "sha256:" + hex}, {"size", size}}.dump();
}

inline OciImage make_oci_image(std::string layer = make_tar({{"hello",
                                                              "hello from the layer\n"}})) {
  OciImage img;
  img.layer = std::move(layer);
  img.layer_hex = sha256_hex(img.layer);
  img.config =
      nlohmann::json{{"architecture", "amd64"},
                     {"os", "linux"},
                     {"rootfs", {{"type", "layers"}, {"diff_ids", {"sha256:" + img.layer_hex}}}}}
          .dump();
  img.config_hex = sha256_hex(img.config);
  img.manifest =
      nlohmann::json{
          {"schemaVersion", 2},
          {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
          {"config",
           nlohmann::json::parse(descriptor_json("application/vnd.oci.image.config.v1+json",
                                                 img.config_hex, img.config.size()))},
          {"layers",
           {nlohmann::json::parse(descriptor_json("application/vnd.oci.image.layer.v1.tar",
                                                  img.layer_hex, img.layer.size()))}}}
          .dump();
  img.manifest_hex = sha256_hex(img.manifest);
  img.index =
      nlohmann::json{
          {"schemaVersion", 2},
          {"manifests",
           {nlohmann::json::parse(descriptor_json("application/vnd.oci.image.manifest.v1+json",
                                                  img.manifest_hex, img.manifest.size()))}}}
          .dump();
  img.members = {{"oci-layout", R"({"imageLayoutVersion":"1.0.0"})"},
                 {"index.json", img.index},
                 {"blobs/sha256/" + img.config_hex, img.config},
                 {"blobs/sha256/" + img.layer_hex, img.layer},
                 {"blobs/sha256/" + img.manifest_hex, img.manifest}};
  return img;
}

}  // namespace sealrun::testing
