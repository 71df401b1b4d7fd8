// SPDX-License-Identifier: Apache-2.0
// Generates a deterministic tree for bench/hash_tree_bench.sh, in one of four shapes (file counts
// at scale 100):
//   toolchain  20,000 files from 1 KiB to 20 MiB (~1.9 GiB), most of them small like headers and a
//              few large like shared libraries and archives (log-uniform tiers)
//   mixed      5,970 files of 1-64 KiB (uniform) plus 30 files of 20 MiB (~0.8 GB)
//   huge       4 files of 1 GiB: as many files as hashing threads times two, nothing else
//   small      220,100 files of 0.5-3 KiB (uniform, ~390 MB): the cold-cache case of issue 17
// in directories of 50 (and 10 of those per top directory), plus a symlink per 60 files. The sizes
// and bytes come from a fixed-seed generator, so every run (and every machine) hashes the same
// tree.
//
//   gen_toolchain_tree DIR [SCALE_PERCENT [SHAPE]]   DIR must not exist; prints files and bytes
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Tier {
  int count;  // files at scale 100
  double min_kib, max_kib;
  bool log_uniform;  // else uniform
};
struct Shape {
  const char* name;
  std::vector<Tier> tiers;
};
const Shape kShapes[] = {
    {"toolchain",
     {
         {16320, 1, 16, true},         // headers, small sources
         {3000, 16, 256, true},        // objects, larger sources
         {600, 256, 4096, true},       // static archives, small libraries
         {80, 4096, 20 * 1024, true},  // big shared libraries, compiler binaries
     }},
    {"mixed", {{5970, 1, 64, false}, {30, 20 * 1024, 20 * 1024, false}}},
    {"huge", {{4, 1024 * 1024, 1024 * 1024, false}}},
    {"small", {{220100, 0.5, 3, false}}},
};

uint64_t g_state = 0x9e3779b97f4a7c15ull;
uint64_t next_u64() {  // xorshift64*
  g_state ^= g_state >> 12;
  g_state ^= g_state << 25;
  g_state ^= g_state >> 27;
  return g_state * 0x2545f4914f6cdd1dull;
}
double next_unit() { return static_cast<double>(next_u64() >> 11) / 9007199254740992.0; }

void die(const std::string& what) {
  std::perror(what.c_str());
  std::exit(1);
}

void write_file(const std::string& path, uint64_t size, std::vector<uint64_t>& buf) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) die("create " + path);
  uint64_t left = size;
  while (left > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size() * 8));
    for (size_t k = 0; k < (n + 7) / 8; ++k) buf[k] = next_u64();  // only the words written
    if (::write(fd, buf.data(), n) != static_cast<ssize_t>(n)) die("write " + path);
    left -= n;
  }
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s DIR [SCALE_PERCENT [toolchain|mixed|huge|small]]\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  const double scale = argc >= 3 ? std::atof(argv[2]) / 100.0 : 1.0;
  const std::string shape_name = argc == 4 ? argv[3] : "toolchain";
  const Shape* shape = nullptr;
  for (const Shape& s : kShapes)
    if (shape_name == s.name) shape = &s;
  if (shape == nullptr) {
    std::fprintf(stderr, "unknown shape %s\n", shape_name.c_str());
    return 2;
  }
  if (scale <= 0) {
    std::fprintf(stderr, "scale must be positive\n");
    return 2;
  }
  if (::mkdir(root.c_str(), 0755) != 0) die("mkdir " + root);

  std::vector<uint64_t> buf(1 << 17);  // 1 MiB
  uint64_t total = 0;
  int links = 0;
  int index = 0;
  for (const Tier& tier : shape->tiers) {
    const int count = std::max(1, static_cast<int>(std::lround(tier.count * scale)));
    for (int k = 0; k < count; ++k, ++index) {
      const std::string top = root + "/d" + std::to_string(index / 500);
      const std::string dir = top + "/s" + std::to_string((index / 50) % 10);
      if (index % 500 == 0) ::mkdir(top.c_str(), 0755);
      if (index % 50 == 0) ::mkdir(dir.c_str(), 0755);
      const double u = next_unit();
      const double kib = tier.log_uniform ? tier.min_kib * std::pow(tier.max_kib / tier.min_kib, u)
                                          : tier.min_kib + (tier.max_kib - tier.min_kib) * u;
      const uint64_t size = static_cast<uint64_t>(kib * 1024);
      // Appended rather than `"f" + std::to_string(...)`: at -O3 GCC 12 reports a -Wrestrict
      // false positive in operator+(const char*, string&&) (GCC bug 105329; fixed in GCC 13).
      std::string name = std::to_string(index);
      name.insert(0, 1, 'f').append(tier.min_kib >= 256 ? ".so" : ".h");
      write_file(dir + "/" + name, size, buf);
      total += size;
      if (index % 60 == 0) {  // lib.so -> lib.so.N style links
        if (::symlink(name.c_str(), (dir + "/" + name + ".link").c_str()) != 0) die("symlink");
        ++links;
      }
    }
  }
  std::printf("%d files, %d symlinks, %llu bytes\n", index, links,
              static_cast<unsigned long long>(total));
  return 0;
}
