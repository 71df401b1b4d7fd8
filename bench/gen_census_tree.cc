// SPDX-License-Identifier: Apache-2.0
// Generates the deterministic tree that bench/census_bench.sh and ownedfs_bench measure: 220,100
// paths counted the way `sealrun census` and `du` count them (the root included) — 2,101
// directories (the root, 100 top directories of 20 leaf directories each) and 217,999 entries
// spread round-robin over the 2,000 leaf directories: regular files of 0–3.5 KiB (~1.75 KiB on
// average, ~380 MB in all, like a build tree of small sources and objects), one symlink and one
// extra hard link (to a regular file of the same leaf) in every 397 entries. Sizes and bytes come
// from a fixed-seed generator, so every run and every machine measures the same tree.
//
//   gen_census_tree DIR [PATHS]    DIR must not exist; PATHS >= 2101 (default 220100)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kTop = 100;
constexpr int kLeavesPerTop = 20;
constexpr int kLeaves = kTop * kLeavesPerTop;
constexpr uint64_t kDirs = 1 + kTop + kLeaves;

uint64_t g_state = 0x243f6a8885a308d3ull;
uint64_t next_u64() {  // xorshift64*
  g_state ^= g_state >> 12;
  g_state ^= g_state << 25;
  g_state ^= g_state >> 27;
  return g_state * 0x2545f4914f6cdd1dull;
}

void die(const std::string& what) {
  std::perror(what.c_str());
  std::exit(1);
}

std::string leaf_path(const std::string& root, int leaf) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "/t%03d/l%02d", leaf / kLeavesPerTop, leaf % kLeavesPerTop);
  return root + buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: gen_census_tree DIR [PATHS]   (DIR must not exist)\n");
    return 2;
  }
  std::string root = argv[1];
  uint64_t paths = argc == 3 ? std::strtoull(argv[2], nullptr, 10) : 220100;
  if (paths < kDirs) {
    std::fprintf(stderr, "gen_census_tree: PATHS must be at least %llu\n",
                 static_cast<unsigned long long>(kDirs));
    return 2;
  }
  if (::mkdir(root.c_str(), 0755) != 0) die("mkdir " + root);
  for (int t = 0; t < kTop; ++t) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "/t%03d", t);
    if (::mkdir((root + buf).c_str(), 0755) != 0) die("mkdir top");
  }
  for (int l = 0; l < kLeaves; ++l)
    if (::mkdir(leaf_path(root, l).c_str(), 0755) != 0) die("mkdir leaf");

  std::vector<uint64_t> buf(3584 / 8 + 1);
  uint64_t entries = paths - kDirs, bytes = 0, links = 0, symlinks = 0;
  for (uint64_t k = 0; k < entries; ++k) {
    int leaf = static_cast<int>(k % kLeaves);
    uint64_t n = k / kLeaves;  // index inside the leaf
    std::string dir = leaf_path(root, leaf);
    std::string name = dir + "/f" + std::to_string(n);
    if (k % 397 == 396) {
      if (::symlink("../../t000/l00/f0", name.c_str()) != 0) die("symlink " + name);
      ++symlinks;
      continue;
    }
    if (k % 397 == 199 && n > 0) {  // a second name for the previous file of this leaf
      if (::link((dir + "/f" + std::to_string(n - 1)).c_str(), name.c_str()) != 0)
        die("link " + name);
      ++links;
      continue;
    }
    uint64_t size = next_u64() % 3585;
    int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) die("create " + name);
    for (auto& w : buf) w = next_u64();
    if (::write(fd, buf.data(), size) != static_cast<ssize_t>(size)) die("write " + name);
    ::close(fd);
    bytes += size;
  }
  std::printf(
      "%s: %llu paths (%llu directories, %llu files, %llu hard links, %llu symlinks), "
      "%llu file bytes\n",
      root.c_str(), static_cast<unsigned long long>(paths), static_cast<unsigned long long>(kDirs),
      static_cast<unsigned long long>(entries - links - symlinks),
      static_cast<unsigned long long>(links), static_cast<unsigned long long>(symlinks),
      static_cast<unsigned long long>(bytes));
  return 0;
}
