// Generates a deterministic toolchain-like tree for bench/hash_tree_bench.sh: ~20,000 files from
// 1 KiB to 20 MiB (~1.9 GiB) at scale 100, most of them small like headers and a few large like
// shared libraries and archives, in directories of 50, plus a few hundred symlinks. The sizes and
// bytes come from a fixed-seed generator, so every run (and every machine) hashes the same tree.
//
//   gen_toolchain_tree DIR [SCALE_PERCENT]    DIR must not exist; prints files and bytes
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
  double share;  // of the file count
  double min_kib, max_kib;
};
// Log-uniform sizes inside each tier.
constexpr Tier kTiers[] = {
    {0.8160, 1, 16},            // headers, small sources
    {0.1500, 16, 256},          // objects, larger sources
    {0.0300, 256, 4096},        // static archives, small libraries
    {0.0040, 4096, 20 * 1024},  // big shared libraries, compiler binaries
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
    for (auto& w : buf) w = next_u64();
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size() * 8));
    if (::write(fd, buf.data(), n) != static_cast<ssize_t>(n)) die("write " + path);
    left -= n;
  }
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s DIR [SCALE_PERCENT]\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  const double scale = argc == 3 ? std::atof(argv[2]) / 100.0 : 1.0;
  const int files = static_cast<int>(20000 * scale);
  if (files < 10) {
    std::fprintf(stderr, "scale too small\n");
    return 2;
  }
  if (::mkdir(root.c_str(), 0755) != 0) die("mkdir " + root);

  std::vector<uint64_t> buf(1 << 17);  // 1 MiB
  uint64_t total = 0;
  int links = 0;
  int index = 0;
  for (const Tier& tier : kTiers) {
    const int count = std::max(1, static_cast<int>(std::lround(files * tier.share)));
    for (int k = 0; k < count; ++k, ++index) {
      const std::string top = root + "/d" + std::to_string(index / 500);
      const std::string dir = top + "/s" + std::to_string((index / 50) % 10);
      if (index % 500 == 0) ::mkdir(top.c_str(), 0755);
      if (index % 50 == 0) ::mkdir(dir.c_str(), 0755);
      const double kib = tier.min_kib * std::pow(tier.max_kib / tier.min_kib, next_unit());
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
