// SPDX-License-Identifier: Apache-2.0
// Micro-benchmarks behind the tree hashing numbers (bench/hash_tree_bench.sh has the end-to-end
// comparison with peers): raw SHA-256 throughput per update size, which shows where per-call
// overhead stops mattering, and hashing one warm file and a warm tree of small files through the
// real code paths (FileHasher, tree_digest) to show the per-file cost.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fingerprint/file_hash.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tree.h"

namespace {

void BM_Sha256Update(benchmark::State& state) {
  const std::string block(static_cast<size_t>(state.range(0)), 'x');
  sealrun::Sha256 h;
  for (auto _ : state) h.update(block);
  benchmark::DoNotOptimize(h.finish());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Sha256Update)->RangeMultiplier(4)->Range(4096, 4 << 20);

struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sealrun-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    path = tmpl;
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
};

void BM_HashWarmFile(benchmark::State& state) {
  ScratchDir dir;
  const auto file = (dir.path / "f").string();
  std::ofstream(file) << std::string(static_cast<size_t>(state.range(0)), 'y');
  for (auto _ : state) {
    auto d = sealrun::hash_file(file);
    if (!d.ok()) state.SkipWithError(d.error().message().c_str());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
// 1 MiB and up go through mappings (FileHasher::kMapThresholdBytes), below through read(2).
BENCHMARK(BM_HashWarmFile)
    ->Arg(4096)
    ->Arg(64 << 10)
    ->Arg((1 << 20) - 4096)
    ->Arg(1 << 20)
    ->Arg(16 << 20);

void BM_TreeDigestSmallFiles(benchmark::State& state) {
  ScratchDir dir;
  const int files = 2000;
  for (int i = 0; i < files; ++i) {
    auto sub = dir.path / ("d" + std::to_string(i / 100));
    std::filesystem::create_directories(sub);
    std::ofstream(sub / ("f" + std::to_string(i))) << std::string(4096, static_cast<char>(i));
  }
  sealrun::TreeOptions options;
  options.threads = static_cast<unsigned>(state.range(0));
  for (auto _ : state) {
    auto s = sealrun::tree_digest(dir.path.string(), options);
    if (!s.ok()) state.SkipWithError(s.error().message().c_str());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * files);
}
BENCHMARK(BM_TreeDigestSmallFiles)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
