// SPDX-License-Identifier: Apache-2.0
// `sealrun index ingest|query|report` as a person and a script use them: the real executable on
// synthetic signed nodes, on SQLite (the default file and an explicit one) and on a real
// PostgreSQL server. The library's cases are in index_test.cc; these check the command line: node
// names from --key, exit codes, the table, one JSON document on success and on failure, the pages.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "attest/keys.h"
#include "core/process.h"
#include "index/synthetic.h"
#include "tests/index/pg_cluster.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class IndexCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* k : {"a", "b"}) {
      auto pair = attest::generate_key_pair(dir_ / (std::string("keys-") + k));
      ASSERT_TRUE(pair) << pair.error().message();
      pubs_.push_back(pair->pub_path);
      keys_.push_back(attest::load_signing_key(pair->key_path).value());
    }
    ASSERT_TRUE(index::synthetic::add_runs(dir_ / "c1", "c1", keys_[0], 12));
    ASSERT_TRUE(index::synthetic::add_runs(dir_ / "c2", "c2", keys_[1], 8));
  }

  Captured sealrun(std::vector<std::string> args) {
    args.insert(args.begin(), std::string(SEALRUN_BINARY_DIR) + "/sealrun");
    SpawnOptions o;
    o.argv = args;
    auto c = run_capture(o, 60'000);
    EXPECT_TRUE(c) << c.error().message();
    return c ? *c : Captured{};
  }

  json sealrun_json(std::vector<std::string> args, int expect_exit) {
    args.push_back("--json");
    auto c = sealrun(args);
    EXPECT_EQ(c.status.code, expect_exit) << c.out << c.err;
    auto doc = json::parse(c.out, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << "not one JSON document: [" << c.out << "]";
    return doc;
  }

  // Ingest both nodes, then ask.
  void ingest_and_ask(const std::string& url) {
    auto in = sealrun_json({"index", "ingest", dir_ / "c1", dir_ / "c2", "--db", url, "--key",
                            "c1=" + pubs_[0], "--key", "c2=" + pubs_[1]},
                           0);
    EXPECT_EQ(in["ok"], true) << in.dump();
    ASSERT_EQ(in["nodes"].size(), 2u);
    EXPECT_EQ(in["nodes"][0]["indexed"], 12);
    EXPECT_EQ(in["nodes"][1]["indexed"], 8);
    std::string out = index::synthetic::output_digest("c2", 5);
    auto q = sealrun_json({"index", "query", "--output-sha256", "sha256:" + out, "--db", url}, 0);
    ASSERT_EQ(q["count"], 1) << q.dump();
    EXPECT_EQ(q["runs"][0]["node"], "c2");
    EXPECT_EQ(q["runs"][0]["id"], "run-5");
    EXPECT_EQ(q["runs"][0]["signer"], keys_[1].key_id());
    EXPECT_EQ(q["runs"][0]["command"][0], "/bin/sh");
    auto table = sealrun(
        {"index", "query", "--input-sha256", index::synthetic::toolchain_digest(4), "--db", url});
    EXPECT_EQ(table.status.code, 0) << table.err;
    EXPECT_NE(table.out.find("run-4"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("2 run(s)"), std::string::npos) << table.out;  // run-4 of c1 and c2
    auto by_state =
        sealrun_json({"index", "query", "--state", "built", "--node", "c1", "--db", url}, 0);
    EXPECT_EQ(by_state["count"], 12);
    // Again: nothing new, still exit 0.
    auto again = sealrun_json({"index", "ingest", dir_ / "c1", "--db", url}, 0);
    EXPECT_EQ(again["nodes"][0]["indexed"], 0);
    EXPECT_EQ(again["nodes"][0]["node"], "c1");
    // The wrong key for a registered node: refused, exit 1, said in the document.
    auto wrong =
        sealrun_json({"index", "ingest", dir_ / "c1", "--db", url, "--key", "c1=" + pubs_[1]}, 1);
    EXPECT_EQ(wrong["exit"], 1);
    EXPECT_NE(wrong["error"].get<std::string>().find("not the key registered"), std::string::npos)
        << wrong.dump();
  }

  TempDir dir_;
  std::vector<std::string> pubs_;
  std::vector<attest::SigningKey> keys_;
};

TEST_F(IndexCliTest, SqliteIngestQueryReport) {
  ingest_and_ask("sqlite:" + dir_ / "fleet.sqlite");
  auto rep = sealrun_json(
      {"index", "report", "--html", dir_ / "report", "--db", "sqlite:" + dir_ / "fleet.sqlite"}, 0);
  EXPECT_EQ(rep["runs"], 20);
  std::string page = read_text(dir_ / "report/index.html");
  EXPECT_NE(page.find("c1"), std::string::npos);
  EXPECT_NE(page.find("not the key registered"), std::string::npos);  // the refusal, on record
  // Run pages are the receipt report's own page when the receipt is at hand.
  std::string run = read_text(dir_ / "report/run-1.html");
  EXPECT_NE(run.find("verified when indexed"), std::string::npos);
}

TEST_F(IndexCliTest, PostgresqlIngestQuery) {
  auto cluster = PgCluster::start();
  ASSERT_TRUE(cluster) << cluster.error().message();
  std::unique_ptr<PgCluster> keep(*cluster);
  auto url = keep->new_database();
  ASSERT_TRUE(url) << url.error().message();
  ingest_and_ask(*url);
}

TEST_F(IndexCliTest, DefaultDatabaseAndNodeNames) {
  // One state directory and one --key: the key names the node; the index is STATE/index.sqlite.
  auto in = sealrun_json({"index", "ingest", dir_ / "c1", "--key", "gpu-07=" + pubs_[0]}, 0);
  EXPECT_EQ(in["nodes"][0]["node"], "gpu-07");
  EXPECT_TRUE(fs::exists(dir_ / "c1/index.sqlite"));
  // A --key for no node given, a malformed --key, a malformed digest: usage errors (exit 2).
  auto stray =
      sealrun_json({"index", "ingest", dir_ / "c1", dir_ / "c2", "--key", "c9=" + pubs_[0]}, 2);
  EXPECT_NE(stray["error"].get<std::string>().find("c9"), std::string::npos) << stray.dump();
  sealrun_json({"index", "ingest", dir_ / "c1", "--key", "c1"}, 2);
  sealrun_json(
      {"index", "query", "--input-sha256", "abc", "--db", "sqlite:" + dir_ / "c1/index.sqlite"}, 2);
  // No index there: exit 1, nothing created.
  sealrun_json({"index", "query", "--db", "sqlite:" + dir_ / "none.sqlite"}, 1);
  EXPECT_FALSE(fs::exists(dir_ / "none.sqlite"));
}

}  // namespace
}  // namespace sealrun::testing
