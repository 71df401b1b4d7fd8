// SPDX-License-Identifier: Apache-2.0
// The hashing ceiling as a fixed amount of work, for timing against `sealrun fingerprint tree`
// pair by pair (bench/README.md): SHA-256 (OpenSSL EVP, as sealrun) of BYTES bytes held in
// memory, 1 MiB per update, split evenly over THREADS threads — what the tree's bytes would cost
// with no file system, no walk and no inventory at all. `openssl speed -evp sha256 -multi N`
// measures the same rate over a fixed time instead of a fixed amount of work.
//
//   hash_ceiling BYTES [THREADS]     THREADS: default 2
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s BYTES [THREADS]\n", argv[0]);
    return 2;
  }
  const unsigned long long bytes = std::strtoull(argv[1], nullptr, 10);
  const unsigned threads = argc == 3 ? static_cast<unsigned>(std::atoi(argv[2])) : 2;
  if (threads == 0) return 2;
  constexpr size_t kBlock = 1 << 20;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([=] {
      auto block = std::make_unique<unsigned char[]>(kBlock);
      for (size_t i = 0; i < kBlock; ++i) block[i] = static_cast<unsigned char>(i * 131 + t);
      EVP_MD_CTX* ctx = EVP_MD_CTX_new();
      EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
      for (unsigned long long left = bytes / threads; left > 0;) {
        const size_t n = left < kBlock ? static_cast<size_t>(left) : kBlock;
        EVP_DigestUpdate(ctx, block.get(), n);
        left -= n;
      }
      unsigned char out[32];
      EVP_DigestFinal_ex(ctx, out, nullptr);
      EVP_MD_CTX_free(ctx);
      std::printf("%02x\n", out[0]);
    });
  }
  for (auto& t : pool) t.join();
  return 0;
}
