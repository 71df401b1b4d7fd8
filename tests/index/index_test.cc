// SPDX-License-Identifier: Apache-2.0
// The fleet index on both back ends, the same cases each: a real SQLite file and a real PostgreSQL
// server (a throwaway cluster, tests/index/pg_cluster.h). Nodes are synthetic but signed for real
// (index/synthetic.h), so ingest verifies signatures, ledgers and ids exactly as for a real node.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "attest/keys.h"
#include "attest/ledger.h"
#include "core/temp_dir.h"
#include "index/db.h"
#include "index/ingest.h"
#include "index/query.h"
#include "index/schema.h"
#include "index/synthetic.h"
#include "tests/index/pg_cluster.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using index::Backend;

// One cluster for the whole binary, stopped and removed when the tests end.
class PgEnvironment : public ::testing::Environment {
 public:
  PgCluster* get() {
    if (!cluster_ && !tried_) {
      tried_ = true;
      auto started = PgCluster::start();
      if (!started) ADD_FAILURE() << started.error().message();
      if (started) cluster_.reset(*started);
    }
    return cluster_.get();
  }
  void TearDown() override { cluster_.reset(); }

 private:
  std::unique_ptr<PgCluster> cluster_;
  bool tried_ = false;
};
PgEnvironment* const pg_env =
    static_cast<PgEnvironment*>(::testing::AddGlobalTestEnvironment(new PgEnvironment));
PgCluster* cluster() { return pg_env->get(); }

// The 10,000-run node, made once for both back ends, on tmpfs (making 30,000 small files on a busy
// ext4 costs more than the ingest under test).
struct BigNode {
  std::unique_ptr<ScopedTempDir> dir;
  std::string path;
  std::optional<attest::PublicKey> pub;
};
BigNode& big_node() {
  static BigNode node = [] {
    BigNode n;
    const char* old = std::getenv("TMPDIR");
    std::string keep = old ? old : "";
    if (fs::is_directory("/dev/shm")) ::setenv("TMPDIR", "/dev/shm", 1);
    auto dir = ScopedTempDir::create("index-big");
    if (old)
      ::setenv("TMPDIR", keep.c_str(), 1);
    else
      ::unsetenv("TMPDIR");
    if (!dir) return n;
    n.dir = std::make_unique<ScopedTempDir>(std::move(*dir));
    auto pair = attest::generate_key_pair(n.dir->path() + "/keys");
    if (!pair) return n;
    auto key = attest::load_signing_key(pair->key_path);
    if (!key) return n;
    n.path = n.dir->path() + "/big";
    if (!index::synthetic::add_runs(n.path, "big", *key, 10'000)) n.path.clear();
    n.pub = key->public_key();
    return n;
  }();
  return node;
}

class IndexTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void TearDownTestSuite() {}
  void SetUp() override {
    if (GetParam() == Backend::kSqlite) {
      url_ = "sqlite:" + dir_ / "index.sqlite";
    } else {
      ASSERT_NE(cluster(), nullptr);
      auto url = cluster()->new_database();
      ASSERT_TRUE(url) << url.error().message();
      url_ = *url;
    }
    db_ = connect();
    key_a_ = make_key("a");
    key_b_ = make_key("b");
  }

  std::unique_ptr<index::Db> connect() {
    auto db = index::open_db(url_, true);
    EXPECT_TRUE(db) << db.error().message();
    if (!db) return nullptr;
    auto v = index::migrate(**db);
    EXPECT_TRUE(v) << v.error().message();
    return std::move(*db);
  }

  attest::SigningKey make_key(const std::string& name) {
    auto pair = attest::generate_key_pair(dir_ / ("keys-" + name));
    EXPECT_TRUE(pair) << pair.error().message();
    return attest::load_signing_key(pair->key_path).value();
  }

  std::string node_dir(const std::string& node) { return dir_ / ("nodes/" + node); }

  void add_runs(const std::string& node, uint64_t n, const attest::SigningKey& key) {
    auto st = index::synthetic::add_runs(node_dir(node), node, key, n);
    ASSERT_TRUE(st) << st.error().message();
  }

  index::NodeOutcome ingest(index::Db& db, const std::string& node,
                            const std::optional<attest::PublicKey>& key) {
    auto o = index::ingest_node(db, {node, node_dir(node), key});
    EXPECT_TRUE(o) << o.error().message();
    return o ? *o : index::NodeOutcome{};
  }

  std::vector<index::IndexedRun> query(const index::QueryFilter& f, bool with_inputs = true) {
    auto runs = index::query_runs(*db_, f, {.with_inputs = with_inputs});
    EXPECT_TRUE(runs) << runs.error().message();
    return runs ? *runs : std::vector<index::IndexedRun>{};
  }

  uint64_t count_runs() { return query({}, false).size(); }

  TempDir dir_;
  std::string url_;
  std::unique_ptr<index::Db> db_;
  std::optional<attest::SigningKey> key_a_, key_b_;
};

TEST_P(IndexTest, IngestsVerifiedRunsAndAnswersByDigestIdempotently) {
  add_runs("n1", 20, *key_a_);
  add_runs("n2", 20, *key_b_);
  auto o1 = ingest(*db_, "n1", key_a_->public_key());
  auto o2 = ingest(*db_, "n2", key_b_->public_key());
  ASSERT_TRUE(o1.ok()) << o1.problems[0];
  ASSERT_TRUE(o2.ok()) << o2.problems[0];
  EXPECT_EQ(o1.indexed, 20u);
  EXPECT_EQ(o1.head_length, 20u);

  index::QueryFilter by_output;
  by_output.output_sha256 = index::synthetic::output_digest("n2", 7);
  auto made = query(by_output);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0].node, "n2");
  EXPECT_EQ(made[0].id, "run-7");
  EXPECT_EQ(made[0].signer, key_b_->key_id());
  ASSERT_EQ(made[0].outputs.size(), 1u);
  EXPECT_EQ(made[0].outputs[0].path, "bin/app");
  bool has_toolchain = false;
  for (const auto& i : made[0].inputs)
    has_toolchain |= i.kind == "toolchain" && i.digest == index::synthetic::toolchain_digest(7);
  EXPECT_TRUE(has_toolchain);

  index::QueryFilter by_input;
  by_input.input_sha256 = index::synthetic::toolchain_digest(3);  // runs 3 and 13 of each node
  EXPECT_EQ(query(by_input).size(), 4u);
  by_input.node = "n1";
  EXPECT_EQ(query(by_input).size(), 2u);
  index::QueryFilter closure;
  closure.input_sha256 = index::synthetic::closure_digest("n1", 11);
  ASSERT_EQ(query(closure).size(), 1u);
  index::QueryFilter since;
  since.since = query({})[0].finished;  // the first run's finish: every run
  EXPECT_EQ(query(since).size(), 40u);
  since.since = "2099-01-01T00:00:00.000Z";
  EXPECT_EQ(query(since).size(), 0u);

  // Again: nothing new. Then five more runs: exactly those.
  auto again = ingest(*db_, "n1", std::nullopt);  // the registered key is used
  ASSERT_TRUE(again.ok()) << again.problems[0];
  EXPECT_EQ(again.indexed, 0u);
  add_runs("n1", 5, *key_a_);
  auto more = ingest(*db_, "n1", std::nullopt);
  ASSERT_TRUE(more.ok()) << more.problems[0];
  EXPECT_EQ(more.indexed, 5u);
  EXPECT_EQ(more.already, 20u);
  EXPECT_EQ(count_runs(), 45u);
}

TEST_P(IndexTest, FourNodesIngestingAtOnce) {
  const std::vector<std::string> nodes = {"w1", "w2", "w3", "w4"};
  for (const auto& n : nodes) add_runs(n, 250, *key_a_);
  // Each worker ingests its own node and then its neighbour's: every node is ingested twice at
  // the same time by two connections, racing for its head.
  std::vector<std::thread> workers;
  std::vector<std::string> failures(nodes.size());
  for (size_t w = 0; w < nodes.size(); ++w)
    workers.emplace_back([&, w] {
      auto db = connect();
      if (!db) return;
      for (size_t k : {w, (w + 1) % nodes.size()}) {
        auto o = index::ingest_node(*db, {nodes[k], node_dir(nodes[k]), key_a_->public_key()},
                                    {.batch = 50});
        if (!o)
          failures[w] += o.error().message() + "\n";
        else if (!o->ok())
          failures[w] += o->problems[0] + "\n";
      }
    });
  for (auto& t : workers) t.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
  EXPECT_EQ(count_runs(), 1000u);
  auto nodes_now = index::list_nodes(*db_);
  ASSERT_TRUE(nodes_now);
  ASSERT_EQ(nodes_now->size(), 4u);
  for (const auto& n : *nodes_now) {
    EXPECT_EQ(n.ledger_length, 250u) << n.node;
    EXPECT_EQ(n.runs, 250u) << n.node;
  }
}

TEST_P(IndexTest, TamperedReceiptIsRefusedAndNothingPastItIndexed) {
  add_runs("t1", 10, *key_a_);
  std::string receipt = node_dir("t1") + "/results/run-6/receipt.json";
  std::string bytes = read_text(receipt);
  bytes.replace(bytes.find("every check passed"), 18, "every check PASSED");
  write_text(receipt, bytes);
  auto o = ingest(*db_, "t1", key_a_->public_key());
  ASSERT_EQ(o.problems.size(), 1u);
  EXPECT_NE(o.problems[0].find("ledger line 6 (run-6 built)"), std::string::npos) << o.problems[0];
  EXPECT_NE(o.problems[0].find("changed or removed"), std::string::npos) << o.problems[0];
  EXPECT_EQ(o.indexed, 5u);
  EXPECT_EQ(o.head_length, 5u);

  // The same receipt edited and its ledger line made to match (the chain re-made from there): the
  // signature no longer verifies.
  auto dir = attest::open_state_dir(node_dir("t1"));
  ASSERT_TRUE(dir);
  std::vector<attest::LedgerEntry> lines;
  ASSERT_TRUE(attest::verify_ledger(
      dir->get(), [&](const attest::LedgerEntry& e, uint64_t) { lines.push_back(e); }));
  std::string rechained, prev = attest::kGenesisPrevSha256;
  for (auto& e : lines) {
    if (e.seq == 6) e.receipt_sha256 = attest::sha256_hex_of(bytes);
    e.prev_sha256 = prev;
    std::string line = attest::format_ledger_line(e);
    prev = attest::sha256_hex_of(line);
    rechained += line;
  }
  write_text(node_dir("t1") + "/ledger.jsonl", rechained);
  auto o2 = ingest(*db_, "t1", std::nullopt);
  ASSERT_EQ(o2.problems.size(), 1u);
  EXPECT_NE(o2.problems[0].find("signature does not verify"), std::string::npos) << o2.problems[0];
  EXPECT_EQ(count_runs(), 5u);
  auto nodes = index::list_nodes(*db_);
  ASSERT_TRUE(nodes);
  EXPECT_EQ((*nodes)[0].problems.size(), 2u);  // both refusals are on record
}

TEST_P(IndexTest, RolledBackLedgerIsRefused) {
  add_runs("r1", 10, *key_a_);
  ASSERT_TRUE(ingest(*db_, "r1", key_a_->public_key()).ok());
  // Truncated: 7 of 10 lines.
  std::string ledger = node_dir("r1") + "/ledger.jsonl";
  std::string all = read_text(ledger);
  size_t cut = 0;
  for (int i = 0; i < 7; ++i) cut = all.find('\n', cut) + 1;
  write_text(ledger, all.substr(0, cut));
  auto o = ingest(*db_, "r1", std::nullopt);
  ASSERT_EQ(o.problems.size(), 1u);
  EXPECT_NE(o.problems[0].find("truncated, rolled back or rewritten"), std::string::npos)
      << o.problems[0];
  // Rolled back and written again: 7 lines kept, 6 new ones — longer than what the index saw, but
  // its line 10 is not the one the index verified.
  // (Signed with another key, so lines 8.. name other receipts than before.)
  for (int i = 8; i <= 10; ++i)
    fs::remove_all(node_dir("r1") + "/results/run-" + std::to_string(i));
  add_runs("r1", 6, *key_b_);
  auto o2 = ingest(*db_, "r1", std::nullopt);
  ASSERT_EQ(o2.problems.size(), 1u);
  EXPECT_NE(o2.problems[0].find("does not extend"), std::string::npos) << o2.problems[0];
  EXPECT_EQ(o2.indexed, 0u);
  EXPECT_EQ(count_runs(), 10u);
  EXPECT_EQ(o2.head_length, 10u);
}

TEST_P(IndexTest, NodeKeyThatDoesNotMatchIsRefused) {
  add_runs("k1", 5, *key_a_);
  // First ingest with the wrong key: the first receipt's signature fails, nothing is indexed.
  auto wrong = ingest(*db_, "k1", key_b_->public_key());
  ASSERT_EQ(wrong.problems.size(), 1u);
  EXPECT_NE(wrong.problems[0].find("ledger line 1"), std::string::npos) << wrong.problems[0];
  EXPECT_EQ(count_runs(), 0u);
  // The node is now registered with key b; key a is not accepted in its place.
  auto other = ingest(*db_, "k1", key_a_->public_key());
  ASSERT_EQ(other.problems.size(), 1u);
  EXPECT_NE(other.problems[0].find("is not the key registered for node k1"), std::string::npos)
      << other.problems[0];
  // A node with no registered key and none given.
  add_runs("k2", 1, *key_a_);
  auto none = ingest(*db_, "k2", std::nullopt);
  ASSERT_EQ(none.problems.size(), 1u);
  EXPECT_NE(none.problems[0].find("give --key k2=PUB"), std::string::npos) << none.problems[0];
  EXPECT_EQ(count_runs(), 0u);
}

TEST_P(IndexTest, QueryByInputDigestAfterTenThousandRuns) {
  auto& big = big_node();
  ASSERT_FALSE(big.path.empty()) << "could not make the 10,000-run node";
  auto t0 = std::chrono::steady_clock::now();
  auto o = index::ingest_node(*db_, {"big", big.path, big.pub}).value();
  auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(o.ok()) << o.problems[0];
  EXPECT_EQ(o.indexed, 10'000u);
  index::QueryFilter one;
  one.input_sha256 = index::synthetic::closure_digest("big", 7777);
  auto q0 = std::chrono::steady_clock::now();
  auto runs = query(one);
  auto q1 = std::chrono::steady_clock::now();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, "run-7777");
  index::QueryFilter shared;
  shared.input_sha256 = index::synthetic::toolchain_digest(3);
  EXPECT_EQ(query(shared, false).size(), 1000u);
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("ingest 10000 signed runs: %.0f ms (%.0f/s); one query by input digest: %.2f ms\n",
              ms(t1 - t0), 10'000 / (ms(t1 - t0) / 1000), ms(q1 - q0));
  EXPECT_LT(ms(q1 - q0), 500.0);  // a lookup by index, not a scan (10 ms in the benchmark)
}

INSTANTIATE_TEST_SUITE_P(Backends, IndexTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         [](const auto& info) {
                           return info.param == Backend::kSqlite ? "sqlite" : "postgresql";
                         });

}  // namespace
}  // namespace sealrun::testing
