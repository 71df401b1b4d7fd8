// SPDX-License-Identifier: Apache-2.0
// Unit tests of the tar reader and inspect_image_archive(): good OCI and docker archives built
// byte by byte, then each way an archive can lie or break (truncation, wrong digest, wrong size,
// missing blob, hostile member names, duplicates, JSON bombs), and GNU/pax long names from real
// tar.
#include "fingerprint/image.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "core/syscall.h"
#include "fingerprint/image_json.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tar_reader.h"
#include "tests/fingerprint/tar_builder.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using testing::make_oci_image;
using testing::make_tar;
using testing::Member;
using testing::TempDir;
using testing::write_text;

Result<ImageIdentity> inspect_bytes(const TempDir& dir, const std::string& bytes) {
  std::string path = dir / "image.tar";
  write_text(path, bytes);
  return inspect_image_archive(path);
}

std::string error_of(const Result<ImageIdentity>& r) {
  return r.ok() ? std::string("(no error)") : r.error().message();
}

TEST(ImageArchive, GoodOciArchiveGivesConfigDigestAndDiffIds) {
  TempDir dir;
  auto img = make_oci_image();
  std::string bytes = make_tar(img.members);
  auto id = inspect_bytes(dir, bytes);
  ASSERT_TRUE(id.ok()) << error_of(id);
  EXPECT_EQ(id->format, "oci-archive");
  EXPECT_EQ(id->image_id, "sha256:" + img.config_hex);
  ASSERT_EQ(id->diff_ids.size(), 1u);
  EXPECT_EQ(id->diff_ids[0], "sha256:" + img.layer_hex);
  EXPECT_EQ(id->archive_sha256, sha256_hex(bytes));
}

TEST(ImageArchive, DotSlashMemberNamesAreAccepted) {
  TempDir dir;
  auto img = make_oci_image();
  for (auto& m : img.members) m.name = "./" + m.name;
  auto id = inspect_bytes(dir, make_tar(img.members));
  ASSERT_TRUE(id.ok()) << error_of(id);
  EXPECT_EQ(id->image_id, "sha256:" + img.config_hex);
}

std::vector<Member> docker_members(const testing::OciImage& img) {
  std::string manifest = nlohmann::json::array({{{"Config", img.config_hex + ".json"},
                                                 {"RepoTags", {"localhost/x:1"}},
                                                 {"Layers", {img.layer_hex + ".tar"}}}})
                             .dump();
  return {{"manifest.json", manifest},
          {img.config_hex + ".json", img.config},
          {img.layer_hex + ".tar", img.layer}};
}

TEST(ImageArchive, GoodDockerArchive) {
  TempDir dir;
  auto img = make_oci_image();
  auto id = inspect_bytes(dir, make_tar(docker_members(img)));
  ASSERT_TRUE(id.ok()) << error_of(id);
  EXPECT_EQ(id->format, "docker-archive");
  EXPECT_EQ(id->image_id, "sha256:" + img.config_hex);
  ASSERT_EQ(id->diff_ids.size(), 1u);
  EXPECT_EQ(id->diff_ids[0], "sha256:" + img.layer_hex);
}

TEST(ImageArchive, DockerLayerWhoseBytesDoNotMatchItsDiffIdIsRefused) {
  TempDir dir;
  auto img = make_oci_image();
  auto members = docker_members(img);
  members[2].data[600] ^= 1;  // inside the layer's file data
  auto id = inspect_bytes(dir, make_tar(members));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(error_of(id).find("digest mismatch"), std::string::npos) << error_of(id);
}

TEST(ImageArchive, DockerConfigWhoseNameClaimsAnotherDigestIsRefused) {
  TempDir dir;
  auto img = make_oci_image();
  auto members = docker_members(img);
  members[1].data += " ";  // still valid JSON, but no longer the digest its name claims
  auto id = inspect_bytes(dir, make_tar(members));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(error_of(id).find("digest mismatch: config"), std::string::npos) << error_of(id);
}

TEST(ImageArchive, TruncatedArchivesAreRefused) {
  TempDir dir;
  std::string bytes = make_tar(make_oci_image().members);
  size_t without_end = bytes.size() - 1024;
  for (size_t cut : {size_t{100}, size_t{700}, bytes.size() / 2, without_end}) {
    auto id = inspect_bytes(dir, bytes.substr(0, cut));
    ASSERT_FALSE(id.ok()) << "cut at " << cut;
    EXPECT_NE(error_of(id).find("truncated"), std::string::npos) << error_of(id);
  }
  auto empty = inspect_bytes(dir, "");
  EXPECT_FALSE(empty.ok());
}

TEST(ImageArchive, BlobWithWrongDigestIsRefused) {
  TempDir dir;
  auto img = make_oci_image();
  img.members[3].data[600] ^= 1;  // the layer, same size, one bit changed
  auto id = inspect_bytes(dir, make_tar(img.members));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(error_of(id).find("digest mismatch for layer 0"), std::string::npos) << error_of(id);
}

TEST(ImageArchive, BlobWithWrongSizeIsRefused) {
  TempDir dir;
  auto img = make_oci_image();
  img.members[3].data += "x";
  auto id = inspect_bytes(dir, make_tar(img.members));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(error_of(id).find("size mismatch for layer 0"), std::string::npos) << error_of(id);
}

TEST(ImageArchive, MissingBlobIsRefused) {
  TempDir dir;
  auto img = make_oci_image();
  img.members.erase(img.members.begin() + 3);
  auto id = inspect_bytes(dir, make_tar(img.members));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(error_of(id).find("not in the archive"), std::string::npos) << error_of(id);
}

TEST(ImageArchive, ConfigDiffIdThatIsNotTheLayerIsRefused) {
  // A self-consistent chain of descriptors whose config names a different layer diff id.
  TempDir dir;
  auto img = make_oci_image();
  auto config = nlohmann::json::parse(img.config);
  config["rootfs"]["diff_ids"][0] = "sha256:" + std::string(64, 'a');
  std::string config_bytes = config.dump();
  std::string config_hex = sha256_hex(config_bytes);
  auto manifest = nlohmann::json::parse(img.manifest);
  manifest["config"]["digest"] = "sha256:" + config_hex;
  manifest["config"]["size"] = config_bytes.size();
  std::string manifest_bytes = manifest.dump();
  std::string manifest_hex = sha256_hex(manifest_bytes);
  auto index = nlohmann::json::parse(img.index);
  index["manifests"][0]["digest"] = "sha256:" + manifest_hex;
  index["manifests"][0]["size"] = manifest_bytes.size();
  std::vector<Member> members = {{"oci-layout", R"({"imageLayoutVersion":"1.0.0"})"},
                                 {"index.json", index.dump()},
                                 {"blobs/sha256/" + config_hex, config_bytes},
                                 {"blobs/sha256/" + img.layer_hex, img.layer},
                                 {"blobs/sha256/" + manifest_hex, manifest_bytes}};
  auto id = inspect_bytes(dir, make_tar(members));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(error_of(id).find("diff_id"), std::string::npos) << error_of(id);
}

TEST(ImageArchive, HostileMemberNamesAreRefused) {
  TempDir dir;
  for (std::string bad : {"/etc/passwd", "../escape", "blobs/../../escape", "a//b", "a/./b"}) {
    auto img = make_oci_image();
    img.members.push_back({bad, "x"});
    auto id = inspect_bytes(dir, make_tar(img.members));
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_NE(error_of(id).find(bad), std::string::npos) << error_of(id);
  }
}

TEST(ImageArchive, DuplicateMemberIsRefused) {
  TempDir dir;
  auto img = make_oci_image();
  img.members.push_back({"index.json", "{}"});
  auto id = inspect_bytes(dir, make_tar(img.members));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(error_of(id).find("more than once"), std::string::npos) << error_of(id);
}

TEST(ImageArchive, BadHeaderChecksumIsRefused) {
  TempDir dir;
  std::string bytes = make_tar(make_oci_image().members);
  bytes[10] ^= 1;  // inside the first member's name
  auto id = inspect_bytes(dir, bytes);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(error_of(id).find("checksum"), std::string::npos) << error_of(id);
}

TEST(ImageArchive, SymlinkAndNonArchiveAreRefused) {
  TempDir dir;
  write_text(dir / "real.tar", make_tar(make_oci_image().members));
  std::filesystem::create_symlink(dir / "real.tar", dir / "link.tar");
  auto link = inspect_image_archive(dir / "link.tar");
  ASSERT_FALSE(link.ok());
  EXPECT_NE(error_of(link).find("symlink"), std::string::npos) << error_of(link);
  auto directory = inspect_image_archive(dir.str());
  EXPECT_FALSE(directory.ok());
  auto plain = inspect_bytes(dir, make_tar({{"hello", "x"}}));
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(error_of(plain).find("neither an OCI layout"), std::string::npos) << error_of(plain);
}

TEST(ImageArchive, OversizedDeclaredMemberIsTruncationNotAllocation) {
  TempDir dir;
  std::string bytes = testing::tar_header("oci-layout", size_t{1} << 40) + std::string(512, 'x');
  auto id = inspect_bytes(dir, bytes);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(error_of(id).find("truncated"), std::string::npos) << error_of(id);
}

TEST(ImageJson, DeepNestingAndDuplicateKeysAreRefused) {
  std::string deep(100000, '[');
  auto r = parse_bounded_json(deep + std::string(100000, ']'), "deep.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("nested deeper"), std::string::npos);
  auto dup = parse_bounded_json(R"({"a":{"b":1,"b":2}})", "dup.json");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message().find("duplicate key \"b\""), std::string::npos);
  auto same_key_elsewhere = parse_bounded_json(R"({"a":{"b":1},"c":{"b":2}})", "ok.json");
  EXPECT_TRUE(same_key_elsewhere.ok());
  EXPECT_FALSE(parse_bounded_json("{\"a\":", "cut.json").ok());
  EXPECT_FALSE(parse_bounded_json(std::string(100, ' '), "big.json", 10).ok());
}

TEST(ImageJson, DeepIndexJsonInAnArchiveIsRefused) {
  TempDir dir;
  auto img = make_oci_image();
  img.members[1].data = std::string(5000, '[') + std::string(5000, ']');
  auto id = inspect_bytes(dir, make_tar(img.members));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(error_of(id).find("nested deeper"), std::string::npos) << error_of(id);
}

// GNU long names ('L') and pax path records, written by real GNU tar.
TEST(TarReader, LongNamesFromGnuAndPaxTar) {
  TempDir dir;
  std::string long_dir = std::string(160, 'd') + "/" + std::string(90, 'e');
  std::filesystem::create_directories(dir / ("tree/" + long_dir));
  write_text(dir / ("tree/" + long_dir + "/file"), "long name content");
  for (std::string format : {"gnu", "pax"}) {
    std::string tar = dir / (format + ".tar");
    std::string cmd = "tar --format=" + format + " -C " + (dir / "tree") + " -cf " + tar + " . 2>" +
                      (dir / "err");
    int rc = std::system(cmd.c_str());
    ASSERT_EQ(rc, 0) << cmd;
    auto fd = open_at(AT_FDCWD, tar, O_RDONLY);
    ASSERT_TRUE(fd.ok());
    auto scan = scan_tar(fd->get(), tar);
    ASSERT_TRUE(scan.ok()) << scan.error().message();
    bool found = false;
    for (const auto& m : scan->members) {
      if (m.name == long_dir + "/file") {
        found = true;
        EXPECT_EQ(m.kind, TarKind::kRegular);
        EXPECT_EQ(m.sha256, sha256_hex("long name content"));
      }
    }
    EXPECT_TRUE(found) << format;
    EXPECT_EQ(scan->archive_sha256, sha256_hex(testing::read_text(tar)));
  }
}

// Recomputes a header's checksum after a test edited its fields.
std::string with_checksum(std::string h) {
  std::memset(h.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h.data() + 148, 8, "%06o", sum);
  return h;
}

TEST(TarReader, Base256SizeAndPaxOverrides) {
  TempDir dir;
  // GNU base-256 size field (high bit set, big-endian binary), here for a 5-byte member.
  std::string h = testing::tar_header("b256", 0);
  std::memset(h.data() + 124, 0, 12);
  h[124] = static_cast<char>(0x80);
  h[135] = 5;
  std::string pax_body = "32 path=pax/overridden/name.txt\n";
  std::string archive = with_checksum(h) + "hello" + std::string(507, '\0') +
                        testing::tar_header("PaxHeader", pax_body.size(), 'x') + pax_body +
                        std::string(512 - pax_body.size(), '\0') +
                        testing::tar_entry("short-name", "pax data") + testing::tar_end();
  write_text(dir / "t.tar", archive);
  auto fd = open_at(AT_FDCWD, dir / "t.tar", O_RDONLY);
  ASSERT_TRUE(fd.ok());
  auto scan = scan_tar(fd->get(), "t.tar");
  ASSERT_TRUE(scan.ok()) << scan.error().message();
  ASSERT_EQ(scan->members.size(), 2u);
  EXPECT_EQ(scan->members[0].name, "b256");
  EXPECT_EQ(scan->members[0].size, 5u);
  EXPECT_EQ(scan->members[0].sha256, sha256_hex("hello"));
  EXPECT_EQ(scan->members[1].name, "pax/overridden/name.txt");
  EXPECT_EQ(scan->members[1].sha256, sha256_hex("pax data"));

  // A pax path that escapes is refused like any other name.
  std::string evil = "25 path=../../etc/passwd\n";
  std::string bad = testing::tar_header("PaxHeader", evil.size(), 'x') + evil +
                    std::string(512 - evil.size(), '\0') + testing::tar_entry("fine", "x") +
                    testing::tar_end();
  write_text(dir / "bad.tar", bad);
  auto bfd = open_at(AT_FDCWD, dir / "bad.tar", O_RDONLY);
  ASSERT_TRUE(bfd.ok());
  auto bscan = scan_tar(bfd->get(), "bad.tar");
  ASSERT_FALSE(bscan.ok());
  EXPECT_NE(bscan.error().message().find("contains '..'"), std::string::npos)
      << bscan.error().message();
}

TEST(TarReader, NormalizeMemberName) {
  EXPECT_EQ(*normalize_member_name("./a/b/"), "a/b");
  EXPECT_EQ(*normalize_member_name("./"), ".");
  EXPECT_FALSE(normalize_member_name("").ok());
  EXPECT_FALSE(normalize_member_name("/a").ok());
  EXPECT_FALSE(normalize_member_name("a/..").ok());
  EXPECT_FALSE(normalize_member_name(std::string("a\0b", 3)).ok());
}

}  // namespace
}  // namespace sealrun
