// SPDX-License-Identifier: Apache-2.0
// What an owned file system costs and saves (run as root; see bench/README.md):
//
//   create  create_owned_fs of an 8 GiB / default-inode file system (record, sparse image,
//           mkfs.ext4, loop device, fsmount, root prepared, move_mount), and mkfs.ext4 alone on the
//           same kind of image, so its share is visible
//   remove  remove_owned_fs (unmount, autoclear wait, image and record unlinked)
//   sample  one census sample of an owned space holding TREE's 220,100 paths: measure_filesystem
//           (statfs + stat) against measure_tree (the walk the directory census makes)
//
//   ownedfs_bench STATE_DIR [ROUNDS] [TREE_GENERATOR]
//
// STATE_DIR must exist (it gets owned/ and ownedfs/); TREE_GENERATOR is gen_census_tree, run once
// inside a 2 GiB owned file system to fill it. Prints median, min and max of each figure.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "census/fs_usage.h"
#include "census/tree_usage.h"
#include "containment/ownedfs/ownedfs.h"
#include "containment/ownedfs/shape.h"
#include "core/process.h"
#include "core/syscall.h"
#include "core/unique_fd.h"

namespace {

using sealrun::monotonic_ms;
using namespace sealrun::ownedfs;

double now_us() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

void report(const char* what, std::vector<double> v, const char* unit) {
  std::sort(v.begin(), v.end());
  std::printf("%-44s median %10.3f %s   min %10.3f   max %10.3f   (n=%zu)\n", what, v[v.size() / 2],
              unit, v.front(), v.back(), v.size());
}

OwnedFsSpec spec_for(const std::string& state, const std::string& id, uint64_t size,
                     uint64_t inodes) {
  std::string mp = state + "/owned/" + id;
  ::mkdir(mp.c_str(), 0700);
  OwnedFsSpec s;
  s.state_dir = state;
  s.id = id;
  s.mount_point = mp;
  s.size_bytes = size;
  s.inodes = inodes;
  s.marker_name = ".sealrun-owned";
  s.marker_text = id + "\n";
  return s;
}

bool clean(const std::vector<Step>& steps) {
  for (const auto& s : steps)
    if (s.left) {
      std::fprintf(stderr, "left: %s: %s\n", s.what.c_str(), s.outcome.c_str());
      return false;
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ownedfs_bench STATE_DIR [ROUNDS] [TREE_GENERATOR]\n");
    return 2;
  }
  std::string state = argv[1];
  int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  ::mkdir((state + "/owned").c_str(), 0711);
  Availability a = probe_ownedfs();
  if (!a.available) {
    std::fprintf(stderr, "ownedfs_bench: %s\n", a.why.c_str());
    return 1;
  }

  constexpr uint64_t k8G = 8ULL << 30;
  std::vector<double> create, remove, mkfs;
  for (int i = 0; i < rounds; ++i) {
    std::string id = "bench-" + std::to_string(i);
    double t0 = now_us();
    auto fs = create_owned_fs(spec_for(state, id, k8G, default_owned_max_inodes(k8G)));
    double t1 = now_us();
    if (!fs) {
      std::fprintf(stderr, "create: %s\n", fs.error().message().c_str());
      return 1;
    }
    auto steps = remove_owned_fs(*fs);
    double t2 = now_us();
    if (!clean(steps)) return 1;
    ::rmdir((state + "/owned/" + id).c_str());
    create.push_back((t1 - t0) / 1000);
    remove.push_back((t2 - t1) / 1000);

    // mkfs.ext4 alone, same options, same kind of image.
    std::string img = state + "/mkfs-only.img";
    ::unlink(img.c_str());
    sealrun::UniqueFd f(::open(img.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!f || ::ftruncate(f.get(), static_cast<off_t>(k8G)) != 0) return 1;
    sealrun::SpawnOptions o;
    o.argv = mkfs_argv("/sbin/mkfs.ext4", img, default_owned_max_inodes(k8G) + kReservedInodes);
    double m0 = now_us();
    auto r = sealrun::run_capture(o, 60000);
    double m1 = now_us();
    if (!r || !r->status.success()) return 1;
    ::unlink(img.c_str());
    mkfs.push_back((m1 - m0) / 1000);
  }
  report("create_owned_fs 8 GiB, 1,048,566 inodes", create, "ms");
  report("  of which: mkfs.ext4 alone (same image)", mkfs, "ms");
  report("remove_owned_fs (unmount, detach, unlink)", remove, "ms");

  if (argc > 3) {
    auto fs = create_owned_fs(spec_for(state, "bench-tree", 2ULL << 30, 300000));
    if (!fs) {
      std::fprintf(stderr, "create: %s\n", fs.error().message().c_str());
      return 1;
    }
    sealrun::SpawnOptions o;
    o.argv = {argv[3], fs->mount_point + "/tree"};
    auto r = sealrun::run_capture(o, 600000);
    if (!r || !r->status.success()) {
      std::fprintf(stderr, "generator failed\n");
      clean(remove_owned_fs(*fs));
      return 1;
    }
    std::printf("%s", r->out.c_str());
    ::sync();
    std::vector<double> statfs_us, walk_ms;
    uint64_t inodes = 0, paths = 0;
    for (int i = 0; i < 1000; ++i) {
      double t0 = now_us();
      auto u = sealrun::census::measure_filesystem(fs->mount_point, fs->device);
      double t1 = now_us();
      if (!u) return 1;
      inodes = u->used_inodes - fs->reserved_inodes;
      statfs_us.push_back(t1 - t0);
    }
    for (int i = 0; i < rounds; ++i) {
      double t0 = now_us();
      auto u = sealrun::census::measure_tree(fs->mount_point);
      double t1 = now_us();
      if (!u) return 1;
      paths = u->paths;
      walk_ms.push_back((t1 - t0) / 1000);
    }
    std::printf("owned space: %llu inodes by statfs, %llu paths by the walk\n",
                static_cast<unsigned long long>(inodes), static_cast<unsigned long long>(paths));
    report("one sample: statfs + stat (file system)", statfs_us, "us");
    report("one sample: walk, 2 threads (directory)", walk_ms, "ms");
    double t0 = now_us();
    bool ok = clean(remove_owned_fs(*fs));
    std::printf("remove_owned_fs holding 220,100 paths: %.1f ms\n", (now_us() - t0) / 1000);
    if (!ok) return 1;
  }
  return 0;
}
