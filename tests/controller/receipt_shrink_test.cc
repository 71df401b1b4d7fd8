// SPDX-License-Identifier: Apache-2.0
// The receipt's shrinking (controller/receipt/receipt.cc): at every size bound, with 50,000 outputs
// or 10,000 cleanup entries, every verdict-bearing field survives — whole at every level, and in
// the last resort as counts with every failing entry — while the output list stays pinned by
// outputs_total and outputs_list_sha256. And the outputs' lossless spelling (receipt_outputs.cc).
#include <gtest/gtest.h>

#include <set>

#include "controller/receipt/receipt.h"
#include "core/strict_json.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tree_json.h"

namespace sealrun::receipt {
namespace {

using nlohmann::json;

Receipt rich_receipt() {
  Receipt r;
  r.id = "shrink";
  r.state = "failed";
  r.exit = 5;
  r.reason = "the job ended with exit 2";
  r.admission_sha256 = std::string(64, 'a');
  for (int i = 0; i < 20; ++i)
    r.verifications.push_back({"pin " + std::to_string(i), "x", i == 7 ? "y" : "x", i != 7});
  r.grant = ContainmentRecord{"bwrap", "enforcing", {"network", "pids"},     {"memory"},
                              {},      {"network"}, {std::string(3000, 't')}};
  CommandRecord job;
  job.label = "job";
  job.argv = {"/bin/sh", "-c", std::string(20000, 'a')};
  job.exit = 2;
  job.stdout_record = {std::string(64, '1'), 100, 100, false, std::string(4000, 'o')};
  job.stderr_record = {std::string(64, '2'), 200, 200, false, std::string(4000, 'e')};
  r.commands.push_back(job);
  for (int i = 0; i < 1000; ++i) r.samples.push_back({i, static_cast<uint64_t>(i), 0, 1});
  r.guard = GuardRecord{"owned_max_bytes", 10, 11, 123};
  MemoryRecord m;
  m.backend = "cgroup-v1";
  m.limits.push_back({"memory.max", 100, 100, true, std::string(5000, 'n')});
  m.events_oom_kill = 1;
  r.memory = m;
  r.stop_confirmed = true;
  r.not_finished = {"toolchain re-check not done: controller received SIGTERM"};
  r.cleanup.push_back({"remove the resource group", false, "EBUSY"});
  r.cleanup.push_back({"remove the owned root", true, std::string(2000, 'd')});
  for (int i = 0; i < 100; ++i) r.notes.push_back(std::string(500, 'w'));
  r.outputs_recorded = true;
  return r;
}

// The failing entries and counts of a verdict list, from either spelling: the full list, or the
// last resort's failing entries with `<name>_total` / `<name>_failed`.
json verdict_list(const json& doc, const std::string& name, const std::string& list_key,
                  bool (*failing)(const json&), json (*key)(const json&)) {
  json entries = json::array();
  size_t failed = 0;
  for (const auto& e : doc[list_key])
    if (failing(e)) {
      entries.push_back(key(e));
      ++failed;
    }
  size_t total = doc[list_key].size();
  if (doc.contains(name + "_total")) {
    total = doc[name + "_total"];
    failed = doc[name + "_failed"];
  }
  return {{"total", total}, {"failed", failed}, {"failing", entries}};
}

// Everything that bears on the verdict, spelled the same whichever level rendered it.
json verdict_view(const json& d) {
  json memory = d["memory"];
  if (memory.is_object())
    for (auto& l : memory["limits"]) l.erase("note");
  json grant = d["grant"];
  if (grant.is_object()) grant.erase("tried");
  json commands = json::array();
  for (const auto& c : d["commands"])
    commands.push_back({c["label"], c["exit"], c["signal"], c["timed_out"], c["stdout"]["sha256"],
                        c["stderr"]["sha256"]});
  return {
      {"state", d["state"]},
      {"exit", d["exit"]},
      {"reason", d["reason"]},
      {"admission_sha256", d["admission_sha256"]},
      {"grant", grant},
      {"guard", d["guard"]},
      {"memory", memory},
      {"stop_confirmed", d["stop_confirmed"]},
      {"not_finished", d["not_finished"]},
      {"outputs_total", d["outputs_total"]},
      {"outputs_list_sha256", d["outputs_list_sha256"]},
      {"verifications",
       verdict_list(
           d, "verifications", "verifications", [](const json& v) { return v["result"] != "pass"; },
           [](const json& v) { return v; })},
      {"cleanup", verdict_list(
                      d, "cleanup", "cleanup", [](const json& c) { return c["result"] != "ok"; },
                      [](const json& c) {
                        return json{c["action"], c["result"]};
                      })},
      {"commands_job", commands[0]},
  };
}

json parse(const std::string& bytes) {
  auto doc = parse_strict_json(bytes);
  EXPECT_TRUE(doc.ok()) << doc.error().message();
  return doc.ok() ? *doc : json();
}

// Renders `r` at each bound and checks the verdict against the unbounded rendering.
void expect_verdict_survives(const Receipt& r) {
  json full = parse(render_receipt(r, size_t{1} << 40));
  json expected = verdict_view(full);
  for (size_t max : {size_t{1} << 20, size_t{256} << 10, size_t{64} << 10, size_t{16} << 10}) {
    SCOPED_TRACE("max " + std::to_string(max));
    std::string bytes = render_receipt(r, max);
    EXPECT_LE(bytes.size(), max);
    json doc = parse(bytes);
    EXPECT_EQ(verdict_view(doc), expected);
    EXPECT_FALSE(doc["truncated"].empty());
    if (max == size_t{1} << 20) {
      // At the default bound nothing of the verdict lists is folded into counts.
      EXPECT_FALSE(doc.contains("cleanup_total"));
      EXPECT_EQ(doc["verifications"], full["verifications"]);
      EXPECT_EQ(doc["cleanup"].size(), full["cleanup"].size());
    }
  }
}

TEST(ReceiptShrink, VerdictSurvivesFiftyThousandOutputs) {
  Receipt r = rich_receipt();
  for (int i = 0; i < 50000; ++i) {
    OutputRecord link;
    link.path = "junk/" + std::to_string(100000 + i);
    link.kind = OutputKind::kSymlink;
    link.target = "/etc/shadow";
    r.outputs.push_back(link);
  }
  r.outputs.push_back({"zz-real-output", 5, std::string(64, 'b')});
  r.outputs_bytes = 5;
  expect_verdict_survives(r);

  std::string list = output_list_bytes(r.outputs);
  json doc = parse(render_receipt(r, 1 << 20));
  EXPECT_EQ(doc["outputs_total"], 50001);
  EXPECT_EQ(doc["outputs_list_sha256"], sha256_hex(list));
  // The real file is listed first, before any of the junk that outnumbers it.
  ASSERT_FALSE(doc["outputs"].empty());
  bool real = false;
  for (const auto& o : doc["outputs"]) real = real || o["path"] == "zz-real-output";
  EXPECT_TRUE(real);
  // Every listed output is, byte for byte, a line of the list.
  for (const auto& o : doc["outputs"])
    EXPECT_NE(list.find(o.dump() + "\n"), std::string::npos) << o.dump();
}

TEST(ReceiptShrink, VerdictSurvivesTenThousandCleanupEntries) {
  Receipt r = rich_receipt();
  for (int i = 0; i < 10000; ++i)
    r.cleanup.push_back(
        {"podman cleanup " + std::to_string(i), i % 1000 != 3, std::string(200, 'c')});
  expect_verdict_survives(r);
}

TEST(ReceiptShrink, ShrunkBuiltReceiptStillVerifies) {
  Receipt r = rich_receipt();
  r.state = "built";
  r.exit = 0;
  r.reason = "the job exited 0 and every check passed";
  r.verifications[7].pass = true;
  r.commands[0].exit = 0;
  r.guard.reset();
  r.not_finished.clear();
  r.cleanup.erase(r.cleanup.begin());
  for (int i = 0; i < 30000; ++i)
    r.outputs.push_back({"f" + std::to_string(i), 1, std::string(64, 'c')});
  for (size_t max : {size_t{1} << 20, size_t{16} << 10}) {
    auto findings = verify_receipt_bytes(render_receipt(r, max));
    ASSERT_TRUE(findings.ok());
    for (const auto& f : *findings)
      EXPECT_TRUE(f.pass) << max << " " << f.check << ": " << f.detail;
  }
}

TEST(ReceiptShrink, FullListMatchesTheListBytes) {
  Receipt r = rich_receipt();
  r.outputs.push_back({"a", 1, std::string(64, 'c')});
  OutputRecord link;
  link.path = "b";
  link.kind = OutputKind::kSymlink;
  link.target = "a";
  r.outputs.push_back(link);
  json doc = parse(render_receipt(r, 1 << 20));
  std::string lines;
  for (const auto& o : doc["outputs"]) lines += o.dump() + "\n";
  EXPECT_EQ(lines, output_list_bytes(r.outputs));
  EXPECT_EQ(doc["outputs_list_sha256"], sha256_hex(lines));
}

TEST(ReceiptShrink, NoListRecordedIsNull) {
  Receipt r = rich_receipt();
  r.outputs_recorded = false;
  json doc = parse(render_receipt(r, 1 << 20));
  EXPECT_TRUE(doc["outputs_total"].is_null());
  EXPECT_TRUE(doc["outputs_list_sha256"].is_null());
}

TEST(OutputNames, ThreeLookalikeNamesAreThreeRecords) {
  std::set<std::string> seen;
  for (std::string name : {"a\377", "a\376", "a\357\277\275"}) {
    json j = output_json({name, 1, std::string(64, 'c')});
    seen.insert(j.dump());
    if (tree_json::is_valid_utf8(name)) {
      EXPECT_EQ(j["path"], name);
      EXPECT_FALSE(j.contains("path_b64"));
    } else {
      ASSERT_TRUE(j.contains("path_b64"));
      EXPECT_EQ(tree_json::base64_decode(j["path_b64"].get<std::string>()), name);
      EXPECT_EQ(j["path"].get<std::string>().find('\377'), std::string::npos);
    }
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(output_json({"a\377", 1, ""})["path"], "a\\xff");
}

TEST(OutputNames, SymlinkTargetsAndControlCharactersAreLossless) {
  OutputRecord link;
  link.path = "nl\nname";
  link.kind = OutputKind::kSymlink;
  link.target = "\033[2J\377";
  json j = output_json(link);
  EXPECT_EQ(j["path"], "nl\nname");  // valid UTF-8: exact, JSON escapes the newline itself
  EXPECT_EQ(j["kind"], "symlink");
  EXPECT_EQ(tree_json::base64_decode(j["target_b64"].get<std::string>()), link.target);
  EXPECT_EQ(j["target"], "\\x1b[2J\\xff");
  EXPECT_EQ(j.dump().find('\033'), std::string::npos);
  OutputRecord dev;
  dev.path = "whiteout";
  dev.kind = OutputKind::kCharDevice;
  dev.device = "0:0";
  EXPECT_EQ(output_json(dev).dump(), R"({"device":"0:0","kind":"char_device","path":"whiteout"})");
}

}  // namespace
}  // namespace sealrun::receipt
