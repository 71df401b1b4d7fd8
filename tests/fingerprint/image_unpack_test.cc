// SPDX-License-Identifier: Apache-2.0
// Unit tests of unpack_image() against hostile layers (image_unpack.h): OCI archives built byte by
// byte whose layers hold a member named with "..", an absolute name, a symlink and then a member
// through it (in the same layer and in a later one), a hard link to outside the root, a device
// node, a whiteout through a link to outside, and a header that declares more bytes than the layer
// has. Each is refused with a message naming the member (a device node is left out and counted),
// and nothing is written or removed outside the destination: a sentinel directory beside it is
// checked after every case.
#include "fingerprint/image_unpack.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fingerprint/sha256.h"
#include "tests/fingerprint/tar_builder.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::descriptor_json;
using testing::make_tar;
using testing::tar_end;
using testing::tar_entry;
using testing::tar_header;
using testing::TempDir;
using testing::write_text;

// An OCI archive of uncompressed `layers`, bottom first, with its image id and diff ids.
struct Archive {
  std::string bytes, image_id;
  std::vector<std::string> diff_ids;
};

Archive oci_archive(const std::vector<std::string>& layers) {
  Archive a;
  json layer_descs = json::array();
  std::vector<testing::Member> blobs;
  for (const std::string& layer : layers) {
    std::string hex = sha256_hex(layer);
    a.diff_ids.push_back("sha256:" + hex);
    layer_descs.push_back(
        json::parse(descriptor_json("application/vnd.oci.image.layer.v1.tar", hex, layer.size())));
    blobs.push_back({"blobs/sha256/" + hex, layer});
  }
  std::string config = json{{"architecture", "amd64"},
                            {"os", "linux"},
                            {"rootfs", {{"type", "layers"}, {"diff_ids", a.diff_ids}}}}
                           .dump();
  std::string config_hex = sha256_hex(config);
  a.image_id = "sha256:" + config_hex;
  std::string manifest = json{
      {"schemaVersion", 2},
      {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
      {"config", json::parse(descriptor_json("application/vnd.oci.image.config.v1+json", config_hex,
                                             config.size()))},
      {"layers",
       layer_descs}}.dump();
  std::string manifest_hex = sha256_hex(manifest);
  std::string index =
      json{{"schemaVersion", 2},
           {"manifests",
            {json::parse(descriptor_json("application/vnd.oci.image.manifest.v1+json", manifest_hex,
                                         manifest.size()))}}}
          .dump();
  blobs.push_back({"oci-layout", R"({"imageLayoutVersion":"1.0.0"})"});
  blobs.push_back({"index.json", index});
  blobs.push_back({"blobs/sha256/" + config_hex, config});
  blobs.push_back({"blobs/sha256/" + manifest_hex, manifest});
  a.bytes = make_tar(blobs);
  return a;
}

// A layer from raw tar entries (tar_entry / tar_header), ended properly.
std::string layer_of(const std::vector<std::string>& entries) {
  std::string out;
  for (const auto& e : entries) out += e;
  return out + tar_end();
}

class Unpack : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "rootfs");
    fs::create_directories(dir_ / "scratch");
    fs::create_directories(outside());
    write_text(outside() + "/victim", "must survive\n");
  }
  std::string outside() const { return (dir_ / "outside"); }
  std::string rootfs() const { return (dir_ / "rootfs"); }

  Result<UnpackedImage> unpack(const std::vector<std::string>& layers) {
    Archive a = oci_archive(layers);
    std::string path = (dir_ / "image.tar");
    fs::remove(path);
    write_text(path, a.bytes);
    return unpack_image(path, a.image_id, a.diff_ids, rootfs(), (dir_ / "scratch"));
  }

  // Nothing outside the root was written, changed or removed.
  void expect_outside_untouched() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(outside()))
      names.push_back(e.path().filename().string());
    EXPECT_EQ(names, std::vector<std::string>{"victim"});
    std::FILE* f = std::fopen((outside() + "/victim").c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[64] = {};
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    EXPECT_EQ(std::string(buf, n), "must survive\n");
    std::vector<std::string> top;
    for (const auto& e : fs::directory_iterator(dir_.path()))
      top.push_back(e.path().filename().string());
    std::sort(top.begin(), top.end());
    EXPECT_EQ(top, (std::vector<std::string>{"image.tar", "outside", "rootfs", "scratch"}));
  }

  TempDir dir_;
};

std::string message(const Result<UnpackedImage>& r) {
  return r.ok() ? std::string("(unpacked)") : r.error().message();
}

TEST_F(Unpack, AGoodLayerIsUnpacked) {
  auto r = unpack({layer_of({tar_entry("bin/", "", '5'), tar_entry("bin/tool", "tool\n"),
                             tar_entry("bin/alias", "tool", '2')})});
  ASSERT_TRUE(r.ok()) << message(r);
  EXPECT_EQ(r->entries, 3u);
  EXPECT_TRUE(fs::is_regular_file(rootfs() + "/bin/tool"));
  EXPECT_TRUE(fs::is_symlink(rootfs() + "/bin/alias"));
  expect_outside_untouched();
}

TEST_F(Unpack, AMemberWithDotDotIsRefusedNamingIt) {
  auto r = unpack({layer_of({tar_entry("a.txt", "a"), tar_entry("../outside/evil", "x")})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("../outside/evil"), std::string::npos) << message(r);
  expect_outside_untouched();
}

TEST_F(Unpack, AnAbsoluteMemberIsRefusedNamingIt) {
  std::string name = outside() + "/evil";
  ASSERT_LT(name.size(), 100u);  // fits the ustar name field
  auto r = unpack({layer_of({tar_entry(name, "x")})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find(name), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("absolute"), std::string::npos) << message(r);
  expect_outside_untouched();
}

TEST_F(Unpack, AMemberThroughASymlinkIsRefusedNamingIt) {
  // In one layer, and with the link in a lower layer and the member in a later one.
  auto same = unpack({layer_of({tar_entry("l", outside(), '2'), tar_entry("l/evil", "x")})});
  ASSERT_FALSE(same.ok());
  EXPECT_NE(message(same).find("member l/evil"), std::string::npos) << message(same);
  expect_outside_untouched();

  fs::remove_all(rootfs());
  fs::create_directories(rootfs());
  auto later = unpack({layer_of({tar_entry("l", "../outside", '2')}),
                       layer_of({tar_entry("l/victim", "overwritten\n")})});
  ASSERT_FALSE(later.ok());
  EXPECT_NE(message(later).find("member l/victim"), std::string::npos) << message(later);
  EXPECT_NE(message(later).find("layer 1"), std::string::npos) << message(later);
  expect_outside_untouched();
}

TEST_F(Unpack, AHardLinkToOutsideTheRootIsRefusedNamingIt) {
  auto up = unpack({layer_of({tar_entry("h", "../outside/victim", '1')})});
  ASSERT_FALSE(up.ok());
  EXPECT_NE(message(up).find("hard link h"), std::string::npos) << message(up);
  expect_outside_untouched();

  // Through a symlink in the root: linkat is resolved beneath the root, never through the link.
  fs::remove_all(rootfs());
  fs::create_directories(rootfs());
  auto via = unpack({layer_of({tar_entry("l", outside(), '2'), tar_entry("h", "l/victim", '1')})});
  ASSERT_FALSE(via.ok());
  EXPECT_NE(message(via).find("member h"), std::string::npos) << message(via);
  expect_outside_untouched();
}

TEST_F(Unpack, DeviceNodesAndFifosAreLeftOutAndCounted) {
  auto r = unpack({layer_of({tar_header("dev-null", 0, '3'), tar_header("disk", 0, '4'),
                             tar_header("fifo", 0, '6'), tar_entry("keep", "k")})});
  ASSERT_TRUE(r.ok()) << message(r);
  EXPECT_EQ(r->skipped, 3u);
  EXPECT_EQ(r->entries, 1u);
  for (const char* name : {"dev-null", "disk", "fifo"})
    EXPECT_FALSE(fs::exists(fs::symlink_status(rootfs() + "/" + name))) << name;
  expect_outside_untouched();
}

TEST_F(Unpack, AWhiteoutThroughALinkToOutsideRemovesNothingThere) {
  auto r = unpack(
      {layer_of({tar_entry("l", outside(), '2')}), layer_of({tar_entry("l/.wh.victim", "")})});
  ASSERT_FALSE(r.ok()) << "a whiteout below a symlink must be refused";
  EXPECT_NE(message(r).find("whiteout l/.wh.victim"), std::string::npos) << message(r);
  expect_outside_untouched();

  fs::remove_all(rootfs());
  fs::create_directories(rootfs());
  auto opaque = unpack(
      {layer_of({tar_entry("l", outside(), '2')}), layer_of({tar_entry("l/.wh..wh..opq", "")})});
  // An opaque whiteout of a directory the root does not have (here: a link) empties nothing.
  EXPECT_TRUE(!opaque.ok() || fs::is_symlink(rootfs() + "/l")) << message(opaque);
  expect_outside_untouched();
}

TEST_F(Unpack, AHeaderDeclaringMoreBytesThanTheLayerHasIsRefused) {
  // Nearly 8 GiB declared (the most 11 octal digits hold), a few bytes there: refused as
  // truncated, nothing allocated for it.
  std::string header = tar_header("big", 0);
  std::snprintf(header.data() + 124, 12, "%011llo", (8ULL << 30) - 1);
  std::memset(header.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : header) sum += c;
  std::snprintf(header.data() + 148, 8, "%06o", sum);
  auto r = unpack({header + std::string(512, 'x') + tar_end()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("layer 0"), std::string::npos) << message(r);
  EXPECT_FALSE(fs::exists(rootfs() + "/big"));
  expect_outside_untouched();
}

}  // namespace
}  // namespace sealrun
