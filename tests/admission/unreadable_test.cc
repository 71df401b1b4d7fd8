// SPDX-License-Identifier: Apache-2.0
// A pinned path the invoking user cannot read is its own refusal, never a mismatch
// (admission/unreadable.h): the classification of errors (table), its message, and verify_pins()
// on real files in a child that has dropped to nobody — where a tree file, a closure file and a
// host tool made mode 000 are each reported `unreadable` with the path and the user, while root,
// who reads them, sees the changed mode as the mismatch it is.
#include "admission/unreadable.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "admission/admitted.h"
#include "admission/verify.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/source.h"
#include "fingerprint/tree.h"
#include "tests/support/temp_dir.h"
#include "tests/support/unprivileged.h"

namespace sealrun::admission {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(Unreadable, ClassifiesOnlyARefusalToRead) {
  testing::TempDir dir;
  const std::string file = dir / "f", tree = dir / "t";
  testing::write_text(file, "f");
  std::filesystem::create_directories(tree + "/sub");
  struct Case {
    const char* name;
    Error error;
    std::string pinned;
    std::optional<std::string> expect;  // the path named, or nothing: not an unreadable pin
  };
  const Case cases[] = {
      {"EACCES on a file: the file", Error::with_errno(EACCES, "open " + file), file, file},
      {"EPERM on a file: the file", Error::with_errno(EPERM, "open " + file), file, file},
      {"context kept", Error::with_errno(EACCES, "open").context("host tool"), file, file},
      {"a path that cannot be looked at", Error::with_errno(EACCES, "open"), dir / "x/y",
       dir / "x/y"},
      // A directory: the entry below it that cannot be read, and here (root) there is none.
      {"EACCES in a readable tree", Error::with_errno(EACCES, "open"), tree, std::nullopt},
      {"no pin", Error::with_errno(EACCES, "hash"), "", std::nullopt},
      {"missing is not unreadable", Error::with_errno(ENOENT, "open " + file), file, std::nullopt},
      {"I/O error", Error::with_errno(EIO, "read " + file), file, std::nullopt},
      {"no errno", Error::make("symlink changed during the walk"), file, std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(unreadable_path(c.error, c.pinned), c.expect) << c.name;
}

TEST(Unreadable, MessageAndFreezeError) {
  EXPECT_EQ(cannot_read_message("/usr/share/polkit-1/rules.d", "alice"),
            "cannot read /usr/share/polkit-1/rules.d as alice: run as root, or pin a tree you "
            "can read");
  Result<int> failed = Error::with_errno(EACCES, "open /t/f").context("host tool /t/f");
  Result<int> said = said_unreadable(std::move(failed), "/t/f");
  ASSERT_FALSE(said.ok());
  EXPECT_EQ(said.error().message(), cannot_read_message("/t/f", invoking_user_name()));
  // Anything else is passed on as it was.
  Result<int> other = said_unreadable(Result<int>(Error::with_errno(ENOENT, "open /t/f")), "/t/f");
  EXPECT_EQ(other.error().message(), "open /t/f: No such file or directory");
  EXPECT_EQ(said_unreadable(Result<int>(7), "/t/f").value(), 7);
  EXPECT_FALSE(invoking_user_name().empty());
}

// fn() as nobody (65534): the tests run as root, who reads a file at mode 000.
std::string as_nobody(const std::function<std::string()>& fn) {
  return sealrun::testing::run_unprivileged(fn);
}

json checks_json(const std::vector<PinCheck>& checks) {
  json out = json::array();
  for (const PinCheck& c : checks) out.push_back(pin_check_to_json(c));
  return out;
}

const json* find_target(const json& checks, const std::string& target) {
  for (const json& c : checks)
    if (c["target"] == target) return &c;
  return nullptr;
}

TEST(Unreadable, VerifyReportsEachUnreadablePinAsSuch) {
  if (::geteuid() != 0) GTEST_SKIP() << "drops to nobody: needs root";
  testing::TempDir dir;
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const std::string src = dir / "src", toolchain = dir / "tc", tree = dir / "tree",
                    file = dir / "closure.so", tool = dir / "tool";
  fs::create_directories(src);
  fs::create_directories(toolchain);
  fs::create_directories(tree + "/sub");
  testing::write_text(src + "/main.c", "int main(void) { return 0; }\n");
  testing::write_text(toolchain + "/cc", "cc");
  testing::write_text(tree + "/a", "a");
  testing::write_text(tree + "/sub/secret", "secret");
  testing::write_text(file, "closure");
  testing::write_text(tool, "tool");
  AdmissionDocument doc;
  doc.source.kind = SourceKind::kTree;
  doc.source.path = src;
  doc.source.manifest = build_manifest(src).value();
  doc.source.manifest_sha256 = manifest_digest(doc.source.manifest);
  doc.toolchain.emplace().root = toolchain;
  doc.toolchain->tree_sha256 = tree_digest(toolchain)->sha256;
  doc.trees.push_back({tree, "/data", tree_digest(tree)->sha256});
  doc.host_files.push_back({file, hash_file(file)->sha256});
  doc.host_tools.push_back({tool, hash_file(tool)->sha256});

  auto verify = [&doc] {
    AdmissionReport report;
    report.checks = verify_pins(doc);
    return json{{"checks", checks_json(report.checks)}, {"summary", report.summary()}}.dump();
  };
  // Everything readable: every view pin passes for nobody too.
  json before = json::parse(as_nobody(verify), nullptr, false);
  ASSERT_FALSE(before.is_discarded());
  EXPECT_EQ((*find_target(before["checks"], "trees:" + tree))["result"], "pass") << before;

  for (const std::string& p : {tree + "/sub/secret", file, tool}) ::chmod(p.c_str(), 0);
  std::string out = as_nobody(verify);
  json after = json::parse(out, nullptr, false);
  ASSERT_FALSE(after.is_discarded()) << out;
  const json* t = find_target(after["checks"], "trees:" + tree);
  ASSERT_NE(t, nullptr) << after;
  EXPECT_EQ((*t)["result"], "unreadable");
  EXPECT_EQ((*t)["observed"], "cannot read " + tree +
                                  "/sub/secret as nobody: run as root, or pin a tree you can read");
  const json* h = find_target(after["checks"], "host_files");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ((*h)["result"], "unreadable");
  EXPECT_EQ((*h)["observed"],
            "cannot read " + file + " as nobody: run as root, or pin a tree you can read");
  const json* tl = find_target(after["checks"], "host_tools:" + tool);
  ASSERT_NE(tl, nullptr);
  EXPECT_EQ((*tl)["result"], "unreadable");
  EXPECT_EQ((*tl)["observed"],
            "cannot read " + tool + " as nobody: run as root, or pin a tree you can read");
  // The summary (a run's and `admit check`'s refusal) is the first of them, not "pin mismatch".
  EXPECT_EQ(after["summary"], "cannot read " + tree +
                                  "/sub/secret as nobody: run as root, or pin a tree you can read");

  // Root reads the same files: the tree's changed mode is a mismatch, the files' bytes are the
  // same.
  AdmissionReport report;
  report.checks = verify_pins(doc);
  json root = checks_json(report.checks);
  EXPECT_EQ((*find_target(root, "trees:" + tree))["result"], "fail");
  EXPECT_EQ((*find_target(root, "host_files"))["result"], "pass");
  EXPECT_EQ(report.summary(), "pin mismatch: trees:" + tree);
}

TEST(Unreadable, FirstUnreadableEntry) {
  if (::geteuid() != 0) GTEST_SKIP() << "drops to nobody: needs root";
  testing::TempDir dir;
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const std::string root = dir / "t";
  fs::create_directories(root + "/a/b");
  fs::create_directories(root + "/c");
  testing::write_text(root + "/a/b/f", "f");
  testing::write_text(root + "/c/g", "g");
  fs::create_symlink("/nonexistent", root + "/dangling");  // a link is pinned by its text
  auto check = [&root] {
    auto r = first_unreadable(root);
    if (!r) return "error: " + r.error().message();
    return r->value_or("(none)");
  };
  EXPECT_EQ(as_nobody(check), "(none)");
  ::chmod((root + "/c/g").c_str(), 0);
  EXPECT_EQ(as_nobody(check), root + "/c/g");
  ::chmod((root + "/a/b").c_str(), 0);  // a directory it may not list, found first (in name order)
  EXPECT_EQ(as_nobody(check), root + "/a/b");
  ::chmod((root + "/a/b").c_str(), 0644);  // listable, but not to be entered
  EXPECT_EQ(as_nobody(check), root + "/a/b");
  ::chmod(root.c_str(), 0);
  EXPECT_EQ(as_nobody(check), root);
  EXPECT_EQ(check(), "(none)") << "root reads everything";
}

}  // namespace
}  // namespace sealrun::admission
