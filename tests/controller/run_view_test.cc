// SPDX-License-Identifier: Apache-2.0
// The job's view is only what was pinned (docs/view.md, issue 16 part 1), proven through the real
// binary with real bwrap and rootless podman: a host file outside the pinned view is not visible
// in the job; a file changed inside a pinned tree refuses the run (exit 3) naming it; the
// receipt's view[] is the job's /proc/self/mountinfo; `receipt verify` fails a hand-edited
// receipt with an unpinned read-only entry; and `admit freeze --tree` refuses what cannot be a
// tree of the view, naming it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "controller/receipt/receipt.h"
#include "fingerprint/sha256.h"
#include "tests/controller/run_test_support.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using ViewTest = RunTest;

class ViewBothMechanisms : public ViewTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(ViewBothMechanisms, AHostFileOutsideThePinnedViewIsNotVisible) {
  const std::string mechanism = GetParam();
  std::string secret = dir_ / "host-secret.txt";
  write_text(secret, "not pinned\n");
  // The host has each of these; none is pinned. (/etc/hostname is not among them: both
  // mechanisms give the job one made for it, docs/view.md.)
  std::vector<std::string> host = {secret,  "/usr/bin/env", "/etc/os-release", "/usr", "/home",
                                   "/root", "/var"};
  for (const auto& p : host) ASSERT_TRUE(fs::exists(p)) << "the host should have " << p;
  std::string script = ": > /out/visible.txt; for p in";
  for (const auto& p : host) script += " " + p;
  script +=
      "; do if [ -e $p ]; then echo $p >> /out/visible.txt; fi; done;"
      " cat /opt/toolchain/tool.txt > /out/pinned.txt";
  Frozen a = freeze_for(mechanism, script, mechanism + ".json");
  auto c = run(a, "hide-" + mechanism, {"--mechanism", mechanism});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  std::string out = state_ + "/results/hide-" + mechanism + "/out";
  EXPECT_EQ(read_text(out + "/visible.txt"), "");
  EXPECT_EQ(read_text(out + "/pinned.txt"), "a toolchain file\n");  // the pinned view is there
}

// The mount points the job saw, from its /proc/self/mountinfo (field 5).
std::set<std::string> mount_points(const std::string& mountinfo) {
  std::set<std::string> out;
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    if (f >> id >> parent >> dev >> root >> point) out.insert(point);
  }
  return out;
}

bool below(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

TEST_P(ViewBothMechanisms, TheReceiptsViewIsTheJobsMountinfo) {
  const std::string mechanism = GetParam();
  // The job also hashes what podman adds itself, to compare with the pins the view records.
  std::string script = "cat /proc/self/mountinfo > /out/mountinfo.txt";
  if (mechanism == "podman")
    script +=
        "; sha256sum /etc/hostname /run/.containerenv /run/podman-init > /out/podman-own.txt;"
        " cat /etc/hostname > /out/hostname.txt";
  else  // bwrap: the job's own /etc (containment/job_etc.h)
    script +=
        "; sha256sum /etc/passwd /etc/group /etc/hosts /etc/hostname /etc/nsswitch.conf"
        " /etc/resolv.conf > /out/etc-own.txt; cat /etc/hostname > /out/hostname.txt";
  Frozen a = freeze_for(mechanism, script, "mi-" + mechanism + ".json");
  std::string id = "mi-" + mechanism;
  auto c = run(a, id, {"--mechanism", mechanism});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json r = receipt(id);
  ASSERT_TRUE(r["view"].is_array()) << r.dump(2);
  std::set<std::string> planned;
  std::map<std::string, json> by_path;
  for (const json& e : r["view"]) {
    EXPECT_TRUE(e.contains("pin") && e.contains("host_path") && e.contains("writable")) << e;
    if (e["kind"] != "link") planned.insert(e["job_path"].get<std::string>());
    by_path[e["job_path"].get<std::string>()] = e;
  }
  std::string out = state_ + "/results/" + id + "/out";
  std::string mountinfo = read_text(out + "/mountinfo.txt");
  std::set<std::string> seen = mount_points(mountinfo);
  ASSERT_FALSE(seen.empty());
  // Every planned entry is a mount point of the job.
  for (const auto& p : planned) EXPECT_EQ(seen.count(p), 1u) << p << " not mounted:\n" << mountinfo;
  // Every mount point is planned, apart from the empty root bwrap builds and what the kernel makes
  // below /proc and /dev (and podman's /sys). Podman's own entries are in the view too
  // (docs/view.md): its sysfs, the files it would generate, its init binary.
  for (const auto& p : seen) {
    if (planned.count(p) || below(p, "/proc") || below(p, "/dev")) continue;
    if (mechanism == "bwrap" && p == "/") continue;
    if (mechanism == "podman" && below(p, "/sys")) continue;
    ADD_FAILURE() << p << " is mounted in the job but not in the receipt's view";
  }
  if (mechanism != "podman") {
    // The six generated files of the job's /etc, each pinned by the SHA-256 of what it read.
    EXPECT_EQ(read_text(out + "/hostname.txt"), "sealrun\n");
    std::istringstream sums(read_text(out + "/etc-own.txt"));
    std::string hex, path;
    std::set<std::string> checked;
    while (sums >> hex >> path) {
      EXPECT_EQ(by_path[path]["kind"], "generated") << path;
      EXPECT_EQ(by_path[path]["pin"], "sha256:" + hex) << path;
      EXPECT_EQ(seen.count(path), 1u) << path << " is not a mount of its own";
      checked.insert(path);
    }
    EXPECT_EQ(checked,
              (std::set<std::string>{"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/hostname",
                                     "/etc/nsswitch.conf", "/etc/resolv.conf"}));
    auto v = sealrun({"receipt", "verify", receipt_path(id)});
    EXPECT_EQ(v.status.code, 0) << v.out << v.err;
    return;
  }
  EXPECT_EQ(seen.count("/etc/hosts"), 0u) << "podman's generated /etc/hosts is turned off";
  EXPECT_EQ(by_path["/sys"]["kind"], "sys");
  EXPECT_EQ(by_path["/etc/hostname"]["kind"], "generated");
  EXPECT_EQ(by_path["/run/.containerenv"]["kind"], "generated");
  EXPECT_EQ(by_path["/run/podman-init"]["kind"], "init");
  EXPECT_EQ(read_text(out + "/hostname.txt"), "sealrun\n");
  // What the job read is what the view pins.
  std::istringstream sums(read_text(out + "/podman-own.txt"));
  std::string hex, path;
  int checked = 0;
  while (sums >> hex >> path) {
    EXPECT_EQ(by_path[path]["pin"], "sha256:" + hex) << path;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
  // `receipt verify` accounts for every entry.
  auto v = sealrun({"receipt", "verify", receipt_path(id)});
  EXPECT_EQ(v.status.code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("view pinned"), std::string::npos) << v.out;
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, ViewBothMechanisms, ::testing::Values("bwrap", "podman"));

// The image's root under bwrap: the pinned archive unpacked (each layer against its diff id) into
// STATE/images/<id>/rootfs, shared by the next run, and bound entry by entry (kind image).
TEST_F(ViewTest, AnImageIsTheRootOfABwrapJobToo) {
  Frozen a = freeze_for("podman",
                        "cat /etc/passwd > /out/passwd.txt; ls /opt > /out/opt.txt;"
                        " cat /proc/self/mountinfo > /out/mountinfo.txt",
                        "image-bwrap.json");
  auto first = run(a, "img-1", {"--mechanism", "bwrap"});
  ASSERT_EQ(first.status.code, 0) << first.out << first.err;
  std::string out = state_ + "/results/img-1/out";
  // The image's own /etc/passwd (tests/fixtures/busybox_image.sh), not the host's.
  EXPECT_EQ(read_text(out + "/passwd.txt"), "root:x:0:0:root:/:/bin/sh\n");
  EXPECT_EQ(read_text(out + "/opt.txt"), "toolchain\n");
  json r = receipt("img-1");
  EXPECT_EQ(r["grant"]["mechanism"], "bwrap");
  std::string image_id = read_text(*busybox_fixture_dir() + "/busybox.image-id");
  while (!image_id.empty() && image_id.back() == '\n') image_id.pop_back();
  std::string rootfs = state_ + "/images/" + image_id.substr(7) + "/rootfs";
  ASSERT_TRUE(fs::exists(rootfs + "/bin/busybox")) << rootfs;
  std::set<std::string> image_paths;
  for (const json& e : r["view"])
    if (e["kind"] == "image") {
      EXPECT_EQ(e["pin"], image_id) << e;
      EXPECT_EQ(e["writable"], false) << e;
      EXPECT_EQ(e["host_path"].get<std::string>().rfind(rootfs, 0), 0u) << e;
      image_paths.insert(e["job_path"].get<std::string>());
    }
  EXPECT_EQ(image_paths.count("/bin"), 1u) << r["view"].dump();
  EXPECT_EQ(image_paths.count("/etc"), 1u) << r["view"].dump();
  auto seen = mount_points(read_text(out + "/mountinfo.txt"));
  for (const auto& p : image_paths) EXPECT_EQ(seen.count(p), 1u) << p;
  // The next run shares the unpacked root: the same directory, not unpacked again.
  struct stat before {};
  ASSERT_EQ(::stat(rootfs.c_str(), &before), 0);
  auto second = run(a, "img-2", {"--mechanism", "bwrap"});
  ASSERT_EQ(second.status.code, 0) << second.out << second.err;
  struct stat after {};
  ASSERT_EQ(::stat(rootfs.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
  // Nothing half-unpacked is left in the controllers' temporaries.
  if (fs::exists(state_ + "/tmp")) {
    for (const auto& e : fs::directory_iterator(state_ + "/tmp")) {
      for (const auto& f : fs::directory_iterator(e.path())) {
        EXPECT_EQ(f.path().filename().string().rfind("image-", 0), std::string::npos) << f.path();
      }
    }
  }
}

TEST_F(ViewTest, AFileChangedInAPinnedTreeRefusesTheRunNamingIt) {
  std::string tree = dir_ / "data";
  fs::create_directories(tree + "/sub");
  write_text(tree + "/a.txt", "a\n");
  write_text(tree + "/sub/b.txt", "b\n");
  ::sleep(1);  // past the digest cache's racy window: the first run records the files by stat
  Frozen a = freeze("cat /opt/data/sub/b.txt > /out/b.txt", {}, "tree.json",
                    {"--tree", tree + "=/opt/data"});
  auto first = run(a, "tree-1");
  ASSERT_EQ(first.status.code, 0) << first.out << first.err;
  EXPECT_EQ(read_text(state_ + "/results/tree-1/out/b.txt"), "b\n");
  json r1 = receipt("tree-1");
  bool recorded = false;
  for (const json& p : r1["pin_cache"]) recorded = recorded || p["root"] == tree;
  EXPECT_TRUE(recorded) << r1["pin_cache"].dump();
  bool in_view = false;
  for (const json& e : r1["view"])
    in_view =
        in_view || (e["job_path"] == "/opt/data" && e["kind"] == "tree" && e["host_path"] == tree &&
                    e["writable"] == false && e["pin"].get<std::string>().rfind("sha256:", 0) == 0);
  EXPECT_TRUE(in_view) << r1["view"].dump();

  write_text(tree + "/sub/b.txt", "swapped\n");
  for (const std::string mechanism : {"bwrap", "podman"}) {
    std::string id = "tree-changed-" + mechanism;
    auto c = run(a, id, {"--mechanism", mechanism});
    EXPECT_EQ(c.status.code, 3) << c.out << c.err;
    EXPECT_NE(c.err.find("trees:" + tree), std::string::npos) << c.err;
    json r = receipt(id);
    std::string failed;
    for (const json& v : r["verifications"])
      if (v["result"] == "fail") failed += v.dump();
    EXPECT_NE(failed.find("changed: sub/b.txt"), std::string::npos) << failed;
    EXPECT_FALSE(fs::exists(state_ + "/results/" + id + "/out/b.txt"));
  }
}

// A learned closure (host_files, host_links: written by `admit freeze --learn`, here by a draft):
// each file verified by its SHA-256 before the run and bound read-only at its own path, each link
// made with its text; a changed file refuses the run naming it.
TEST_P(ViewBothMechanisms, AClosureIsVerifiedAndBoundFileByFile) {
  const std::string mechanism = GetParam();
  // Not below /tmp: that is the job's own private /tmp, where no host file may be bound.
  const std::string closure =
      "/var/tmp/sealrun-closure-" + std::to_string(::getpid()) + "-" + mechanism;
  struct Remove {
    std::string path;
    ~Remove() { fs::remove_all(path); }
  } remove{closure};
  std::string file = closure + "/lib/data.txt";
  fs::create_directories(closure + "/lib");
  fs::permissions(closure, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  write_text(file, "closure bytes\n");
  std::string digest = sha256_hex("closure bytes\n");
  json draft = {{"host_files", {{{"path", file}, {"sha256", digest}}}},
                {"host_links", {{{"path", closure + "/link.txt"}, {"target", "lib/data.txt"}}}}};
  write_text(dir_ / "draft.json", draft.dump());
  std::string script = "cat " + file + " > /out/file.txt; ls " + closure + " > /out/ls.txt; cat " +
                       closure + "/link.txt > /out/link.txt; true";
  Frozen a = freeze_for(mechanism, script, "closure-" + mechanism + ".json",
                        {"--draft", dir_ / "draft.json"});
  std::string id = "closure-" + mechanism;
  auto c = run(a, id, {"--mechanism", mechanism});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  std::string out = state_ + "/results/" + id + "/out";
  EXPECT_EQ(read_text(out + "/file.txt"), "closure bytes\n");
  json r = receipt(id);
  bool bound = false;
  for (const json& e : r["view"])
    bound = bound || (e["kind"] == "closure" && e["job_path"] == file &&
                      e["pin"] == "sha256:" + digest && e["writable"] == false);
  EXPECT_TRUE(bound) << r["view"].dump();
  if (mechanism == "bwrap") {  // links are made in an empty root only (docs/view.md)
    EXPECT_EQ(read_text(out + "/link.txt"), "closure bytes\n");
    EXPECT_EQ(read_text(out + "/ls.txt"), "lib\nlink.txt\n");
  }

  write_text(file, "changed on the host\n");
  auto changed = run(a, id + "-changed", {"--mechanism", mechanism});
  EXPECT_EQ(changed.status.code, 3) << changed.out << changed.err;
  EXPECT_NE(changed.err.find(file), std::string::npos) << changed.err;
}

TEST_F(ViewTest, ReceiptVerifyFailsAnUnpinnedReadOnlyViewEntry) {
  Frozen a = freeze("echo hi > /out/hi.txt");
  ASSERT_EQ(run(a, "verify-view").status.code, 0);
  std::string path = receipt_path("verify-view");
  auto good = sealrun({"receipt", "verify", path});
  EXPECT_EQ(good.status.code, 0) << good.out << good.err;
  EXPECT_NE(good.out.find("view pinned"), std::string::npos) << good.out;

  // Forged: the host's /usr slipped into the view without a pin, the digest recomputed.
  json doc = receipt("verify-view");
  doc["view"].push_back({{"job_path", "/usr"},
                         {"kind", "tree"},
                         {"host_path", "/usr"},
                         {"pin", nullptr},
                         {"writable", false}});
  doc["digest"]["value"] = sha256_hex(receipt::digest_payload(doc));
  std::string forged = dir_ / "forged.json";
  write_text(forged, doc.dump(2));
  auto bad = sealrun({"receipt", "verify", forged});
  EXPECT_NE(bad.status.code, 0) << bad.out;
  size_t line = bad.out.find("view pinned");
  ASSERT_NE(line, std::string::npos) << bad.out;
  size_t start = bad.out.rfind('\n', line);
  start = start == std::string::npos ? 0 : start + 1;
  std::string rest = bad.out.substr(start, bad.out.find('\n', line) - start);
  EXPECT_NE(rest.find("FAIL"), std::string::npos) << rest;
  EXPECT_NE(rest.find("/usr"), std::string::npos) << rest;
}

TEST_F(ViewTest, FreezeRefusesATreeThatCannotBeInTheViewNamingIt) {
  fs::create_directories(state_ + "/inside");
  std::string data = dir_ / "data";
  fs::create_directories(data);
  std::string link = dir_ / "data-link";
  fs::create_directory_symlink(data, link);
  struct Case {
    std::vector<std::string> trees;
    std::string named;  // in the error
  };
  const std::vector<Case> cases = {
      {{link}, "symlink"},
      {{link + "=/data"}, link},
      {{"/proc"}, "/proc"},
      {{"/proc/self=/x"}, "/proc/self"},
      {{"/"}, "\"/\""},
      {{state_ + "/inside"}, "state directory"},
      {{state_}, "state directory"},
      {{data + "=/src"}, "mounts.source"},
      {{data + "=/out"}, "mounts.output"},
      {{data + "=/scratch/x"}, "mounts.scratch"},
      {{data + "=/tmp"}, "mounts.tmp"},
      {{data + "=/proc"}, "/proc"},
      {{data + "=/dev"}, "/dev"},
      {{data + "=/opt"}, "toolchain.mount_path"},
      {{data + "=/data", data + "=/data/x"}, "trees[2].job_path"},  // [0] is the busybox /bin
      {{data + "=/bin"}, "trees[1].job_path"},
      {{data + "/missing"}, "missing"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> extra;
    for (const auto& t : c.trees) extra.insert(extra.end(), {"--tree", t});
    SCOPED_TRACE(extra.back());
    std::vector<std::string> args = freeze_args("refused.json");
    args.push_back("--force");
    auto shell = busybox_tree_args();
    args.insert(args.end(), shell.begin(), shell.end());
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "/bin/true"});
    auto r = sealrun(args);
    EXPECT_NE(r.status.code, 0);
    EXPECT_NE(r.err.find(c.named), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "refused.json"));
  }
}

}  // namespace
}  // namespace sealrun::testing
