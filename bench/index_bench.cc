// SPDX-License-Identifier: Apache-2.0
// The fleet index's two figures (bench/README.md, "Fleet index"), on SQLite and on a real
// PostgreSQL server (a throwaway cluster, tests/index/pg_cluster.h):
//   1. ingest rate: signed synthetic receipts (index/synthetic.h: a real receipt's shape, each
//      signed with Ed25519 and chained into the ledger) through index::ingest_node — reading,
//      hashing, signature checks, ledger verification and the writes all counted.
//   2. query time by digest with a large index: the tables filled to N runs (rows as ingest
//      writes them, inserted directly: a million signed receipts would take the machine's disk
//      and a quarter hour), then the median and worst of 200 questions by input digest and by
//      output digest, each through index::query_runs with the runs' inputs read too.
// `index_bench [--short] [--backend sqlite|postgresql|both] [--ingest N] [--indexed N]`;
// --short (CI) is 1,000 receipts and 20,000 runs.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include "attest/keys.h"
#include "attest/openssl_util.h"
#include "core/temp_dir.h"
#include "index/db.h"
#include "index/ingest.h"
#include "index/query.h"
#include "index/schema.h"
#include "index/synthetic.h"
#include "tests/index/pg_cluster.h"

namespace {

using namespace sealrun;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

[[noreturn]] void die(const std::string& what) {
  fmt::print(stderr, "index_bench: {}\n", what);
  std::exit(1);
}

template <typename T>
T must(Result<T> r, const char* what) {
  if (!r) die(fmt::format("{}: {}", what, r.error().message()));
  return std::move(*r);
}
void must(Status s, const char* what) {
  if (!s) die(fmt::format("{}: {}", what, s.error().message()));
}

std::unique_ptr<index::Db> open(const std::string& url) {
  auto db = must(index::open_db(url, true), "open");
  must(index::migrate(*db), "migrate");
  return db;
}

std::string hex_of(const std::string& what) { return attest::sha256_hex_of(what); }

// Fills node "bulk" with `n` runs shaped as ingest writes them: 7 inputs, 2 outputs each.
void fill(index::Db& db, uint64_t n) {
  const uint64_t kBatch = 5000;
  auto t0 = Clock::now();
  for (uint64_t start = 1; start <= n; start += kBatch) {
    std::vector<index::Row> runs, inputs, outputs;
    for (uint64_t seq = start; seq < start + kBatch && seq <= n; ++seq) {
      std::string s = std::to_string(seq);
      runs.push_back({"bulk", s, "run-" + s, seq % 17 ? "built" : "failed", "0", "ok",
                      fmt::format("2026-11-01T00:00:{:02}.000Z", seq % 60),
                      fmt::format("2026-11-{:02}T00:00:00.{:03}Z", 1 + seq % 28, seq % 1000),
                      "2026-11-01T00:00:00.000Z", hex_of("key"),
                      hex_of(fmt::format("adm {}", seq % 100)), "[\"/bin/sh\",\"-c\",\"make\"]",
                      hex_of("receipt " + s), "/state/results/run-" + s + "/receipt.json"});
      const char* kinds[] = {"admission", "source",  "toolchain", "tree",
                             "closure",   "closure", "generated"};
      for (int i = 0; i < 7; ++i) {
        std::string digest = i == 2   ? index::synthetic::toolchain_digest(seq % 10)
                             : i == 3 ? hex_of("busybox")
                             : i == 4 ? index::synthetic::closure_digest("bulk", seq)
                                      : hex_of(fmt::format("{} {} {}", kinds[i], i, seq % 5000));
        inputs.push_back({"bulk", s, std::to_string(i), kinds[i], fmt::format("{}:{}", kinds[i], i),
                          "file:///x", "sha256", digest});
      }
      outputs.push_back(
          {"bulk", s, "bin/app", "4096", index::synthetic::output_digest("bulk", seq)});
      outputs.push_back({"bulk", s, "README", "120", hex_of("readme")});
    }
    must(db.begin_write(), "begin");
    must(db.insert_rows("runs",
                        {"node", "seq", "id", "state", "exit_code", "reason", "started", "finished",
                         "ledger_at", "signer", "admission_sha256", "command", "receipt_sha256",
                         "receipt_path"},
                        runs),
         "insert runs");
    must(db.insert_rows("inputs",
                        {"node", "seq", "ordinal", "kind", "name", "uri", "algorithm", "digest"},
                        inputs),
         "insert inputs");
    must(db.insert_rows("outputs", {"node", "seq", "path", "size", "sha256"}, outputs),
         "insert outputs");
    must(db.commit(), "commit");
  }
  if (db.backend() == index::Backend::kPostgres)
    must(db.exec("ANALYZE"), "analyze");
  else
    must(db.exec("ANALYZE"), "analyze");
  fmt::print("  filled {} runs ({} rows) in {:.1f} s\n", n, n * 10, ms_since(t0) / 1000);
}

struct Stats {
  double median = 0, p99 = 0, max = 0;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() * 99 / 100], v.back()};
}

void bench_backend(const std::string& name, const std::function<std::string()>& new_url,
                   const std::string& work, const attest::SigningKey& key, uint64_t ingest_n,
                   uint64_t indexed_n) {
  fmt::print("{}:\n", name);
  {
    auto db = open(new_url());
    struct rusage r0 {
    }, r1{};
    ::getrusage(RUSAGE_SELF, &r0);
    auto t0 = Clock::now();
    auto o = must(index::ingest_node(*db, {"node", work, key.public_key()}), "ingest");
    double ms = ms_since(t0);
    ::getrusage(RUSAGE_SELF, &r1);
    auto cpu_ms = [](const struct rusage& a, const struct rusage& b) {
      auto t = [](const timeval& v) { return v.tv_sec * 1000.0 + v.tv_usec / 1000.0; };
      return t(b.ru_utime) - t(a.ru_utime) + t(b.ru_stime) - t(a.ru_stime);
    };
    if (!o.ok() || o.indexed != ingest_n)
      die("ingest refused: " + (o.problems.empty() ? "" : o.problems[0]));
    double cpu = cpu_ms(r0, r1);
    fmt::print(
        "  ingest: {} signed receipts in {:.0f} ms = {:.0f} receipts/s (this process's CPU: "
        "{:.0f} ms, {:.0f} receipts per CPU-second)\n",
        ingest_n, ms, ingest_n / (ms / 1000), cpu, ingest_n / (cpu / 1000));
  }
  auto db = open(new_url());
  fill(*db, indexed_n);
  std::mt19937_64 rng(42);
  std::vector<double> by_input, by_output;
  for (int i = 0; i < 200; ++i) {
    uint64_t seq = 1 + rng() % indexed_n;
    index::QueryFilter f;
    f.input_sha256 = index::synthetic::closure_digest("bulk", seq);
    auto t0 = Clock::now();
    auto runs = must(index::query_runs(*db, f), "query");
    by_input.push_back(ms_since(t0));
    if (runs.size() != 1 || runs[0].seq != seq) die("query by input found the wrong runs");
    index::QueryFilter g;
    g.output_sha256 = index::synthetic::output_digest("bulk", seq);
    t0 = Clock::now();
    runs = must(index::query_runs(*db, g), "query");
    by_output.push_back(ms_since(t0));
    if (runs.size() != 1) die("query by output found the wrong runs");
  }
  auto a = stats(by_input), b = stats(by_output);
  fmt::print(
      "  query at {} runs, by input digest: median {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms\n",
      indexed_n, a.median, a.p99, a.max);
  fmt::print(
      "  query at {} runs, by output digest: median {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms\n",
      indexed_n, b.median, b.p99, b.max);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as soon as it is known
  uint64_t ingest_n = 5000, indexed_n = 1'000'000;
  std::string backend = "both";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--short") {
      ingest_n = 1000;
      indexed_n = 20'000;
    } else if (a == "--backend" && i + 1 < argc) {
      backend = argv[++i];
    } else if (a == "--ingest" && i + 1 < argc) {
      ingest_n = std::stoull(argv[++i]);
    } else if (a == "--indexed" && i + 1 < argc) {
      indexed_n = std::stoull(argv[++i]);
    } else {
      die("usage: index_bench [--short] [--backend sqlite|postgresql|both] [--ingest N] "
          "[--indexed N]");
    }
  }
  auto tmp = must(ScopedTempDir::create("index-bench"), "temp dir");
  std::string work = tmp.path() + "/node";
  auto pair = must(attest::generate_key_pair(tmp.path() + "/keys"), "key");
  auto key = must(attest::load_signing_key(pair.key_path), "key");
  auto t0 = Clock::now();
  must(index::synthetic::add_runs(work, "node", key, ingest_n), "synthetic node");
  fmt::print("made {} signed receipts in {:.1f} s\n", ingest_n, ms_since(t0) / 1000);
  int dbs = 0;
  if (backend == "sqlite" || backend == "both")
    bench_backend(
        "sqlite", [&] { return fmt::format("sqlite:{}/index-{}.sqlite", tmp.path(), ++dbs); }, work,
        key, ingest_n, indexed_n);
  if (backend == "postgresql" || backend == "both") {
    std::unique_ptr<testing::PgCluster> cluster(must(testing::PgCluster::start(), "postgresql"));
    bench_backend(
        "postgresql", [&] { return must(cluster->new_database(), "database"); }, work, key,
        ingest_n, indexed_n);
  }
  return 0;
}
