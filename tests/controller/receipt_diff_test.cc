// SPDX-License-Identifier: Apache-2.0
// `receipt diff` as pure functions (controller/receipt/receipt_diff.h): a table of changes made to
// one receipt, each with the verdict and the differences it must give; the masking of the run id;
// plain JSON values; escaping for a terminal; and that every receipt field has a class.
#include "controller/receipt/receipt_diff.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "controller/receipt/receipt_fields.h"

namespace sealrun::receipt::diff {
namespace {

using nlohmann::json;

// A receipt of run `id` shaped like a real one (bwrap, a learned closure, an owned file system).
json receipt_of(const std::string& id) {
  std::string text = R"json({
    "schema": "sealrun-receipt-v1", "state": "built", "exit": 0, "reason": "ok",
    "admission_sha256": "aa", "started": "t0", "finished": "t1",
    "digest": {"algorithm": "sha256", "value": "d0"},
    "sealrun_version": {"version": "0.2.0", "commit": "c0", "dirty": false},
    "signing": null, "rebuild_of": null, "slurm": null, "guard": null,
    "admission": {"sha256": "aa", "command": {"argv": ["/bin/sh", "-c", "make"], "cwd": "/src"},
      "env": {"PATH": "/usr/bin:/bin"},
      "inputs": [
        {"name": "source", "uri": "file:///src", "digest": {"sealrun_sourceManifestV1": "s1"}},
        {"name": "closure:/etc/os-release", "uri": "file:///etc/os-release",
         "digest": {"sha256": "e1"}, "annotations": {"kind": "closure"}},
        {"name": "tree:/data", "uri": "file:///data", "digest": {"sha256": "t1"}}]},
    "verifications": [{"target": "admission", "expected": "aa", "observed": "aa", "result": "pass"},
      {"target": "host_files", "expected": "1 file(s)", "observed": "1 file(s)", "result": "pass"}],
    "pin_cache": [{"root": "/data", "status": "miss", "entries": 3, "files": 2,
      "checked_by_stat": 0, "rehashed": 2, "digest_from_cache": false, "stored": true}],
    "grant": {"mechanism": "bwrap", "mode": "enforcing", "enforced": ["filesystem", "network"],
      "degraded": [], "required": ["filesystem", "network"], "unenforced_required": [],
      "tried": ["bwrap: enforces filesystem, network"],
      "probe": {"cached": false, "key": "k1", "note": "no entry; probed"}},
    "memory": {"backend": "cgroup-v2", "events": {"high": 0, "max": 0, "oom": 0, "oom_kill": 0},
      "limits": [{"name": "memory_max_bytes", "requested": 8, "observed": 8, "applied": true,
        "effective": 8, "effective_set_by": "memory:/sealrun-ID.123.456", "note": "memory.max"}],
      "peak_bytes": 1000, "swap_used_bytes": 0},
    "owned_space": {"kind": "filesystem", "size_bytes": 8, "inodes": 4, "made": "mkfs.ext4 (...)"},
    "view": [
      {"job_path": "/proc", "kind": "proc", "host_path": null, "pin": null, "writable": false},
      {"job_path": "/src", "kind": "source", "host_path": "/state/exports/ID.123.456/source",
       "pin": "sha256:s1", "writable": false},
      {"job_path": "/out", "kind": "out", "host_path": "/state/results/ID/out", "pin": null,
       "writable": true},
      {"job_path": "/etc/os-release", "kind": "closure", "host_path": "/etc/os-release",
       "pin": "sha256:e1", "writable": false},
      {"job_path": "/etc/hostname", "kind": "generated", "host_path": "OWNED/view/hostname",
       "pin": "sha256:h1", "writable": false}],
    "commands": [{"label": "job", "argv": ["/bin/sh", "-c", "make"], "exit": 0, "signal": 0,
      "timed_out": false, "started": "t0", "finished": "t1",
      "stdout": {"sha256": "o1", "size": 0, "read_bytes": 0, "cut": false, "tail": ""}}],
    "samples": [{"t_ms": 0, "owned_bytes": 1, "result_bytes": 1, "free_bytes": 9}],
    "samples_dropped": 0, "stop_confirmed": true,
    "cleanup": [{"action": "bwrap cleanup", "result": "ok", "detail": "bwrap 3583: gone"},
      {"action": "bwrap cleanup", "result": "ok", "detail": "no state to remove"},
      {"action": "remove the owned root", "result": "ok", "detail": "OWNED"}],
    "not_finished": [], "notes": [], "truncated": [],
    "outputs": [{"path": "a", "size": 1, "sha256": "f1"}, {"path": "b", "size": 1, "sha256": "f2"}],
    "outputs_total": 2, "outputs_list_sha256": "l1", "outputs_bytes": 2
  })json";
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"OWNED", "/state/owned/ID"}, {"ID", id}})
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
      text.replace(at, from.size(), to);
  json r = json::parse(text);
  r["id"] = id;
  return r;
}

json& view_entry(json& r, const std::string& job_path) {
  for (auto& v : r["view"])
    if (v["job_path"] == job_path) return v;
  throw std::runtime_error("no view entry " + job_path);
}

std::set<std::string> paths_of(const Result& r) {
  std::set<std::string> out;
  for (const auto& d : r.differences) out.insert(d.path);
  return out;
}

struct Case {
  const char* name;
  std::function<void(json&)> change;  // made to B (run r2) after it is made like A (run r1)
  bool all;
  bool same_inputs, same_environment, same_outputs;
  std::set<std::string> paths;  // every difference listed
};

const Case kCases[] = {
    {"two runs of the same thing: only per-run fields differ",
     [](json& b) {
       b["started"] = "t9";
       b["digest"]["value"] = "d9";
       b["commands"][0]["finished"] = "t9";
       b["memory"]["peak_bytes"] = 2000;
       b["owned_space"]["made"] = "template 8cc7";
       b["grant"]["probe"] = {{"cached", true}, {"key", "k1"}, {"note", "hit"}};
       b["pin_cache"][0]["status"] = "hit";
       b["cleanup"][0]["detail"] = "bwrap 8159: gone";
       b["samples"].push_back({{"t_ms", 5000}});
     },
     false,
     true,
     true,
     true,
     {}},
    {"--all lists them, the run's own paths unmasked, and the verdict stays",
     [](json& b) { b["memory"]["peak_bytes"] = 2000; },
     true,
     true,
     true,
     true,
     {"id", "memory.peak_bytes", "memory.limits[memory_max_bytes].effective_set_by",
      "view[/src].host_path", "view[/out].host_path", "view[/etc/hostname].host_path",
      "cleanup[remove the owned root].detail"}},
    {"an input's digest changed (the top-level digest rule applied at every depth hid it)",
     [](json& b) { b["admission"]["inputs"][2]["digest"]["sha256"] = "t2"; },
     false,
     false,
     true,
     true,
     {"admission.inputs[tree:/data].digest.sha256"}},
    {"a closure file changed: its input and the view entry that binds it",
     [](json& b) {
       b["admission"]["inputs"][1]["digest"]["sha256"] = "e2";
       view_entry(b, "/etc/os-release")["pin"] = "sha256:e2";
     },
     false,
     false,
     true,
     true,
     {"admission.inputs[closure:/etc/os-release].digest.sha256", "view[/etc/os-release].pin"}},
    {"a generated /etc file is the environment",
     [](json& b) { view_entry(b, "/etc/hostname")["pin"] = "sha256:h2"; },
     false,
     true,
     false,
     true,
     {"view[/etc/hostname].pin"}},
    {"a view entry added in front shifts nothing",
     [](json& b) {
       b["view"].insert(b["view"].begin(), json{{"job_path", "/usr"},
                                                {"kind", "tree"},
                                                {"host_path", "/usr"},
                                                {"pin", "sha256:u"},
                                                {"writable", false}});
     },
     false,
     false,
     true,
     true,
     {"view[/usr]"}},
    {"a view entry that names another run's directory is not masked",
     [](json& b) { view_entry(b, "/out")["host_path"] = "/state/results/r1/out"; },
     false,
     true,
     false,
     true,
     {"view[/out].host_path"}},
    {"a dimension no longer enforced, matched by value",
     [](json& b) { b["grant"]["enforced"] = {"filesystem"}; },
     false,
     true,
     false,
     true,
     {"grant.enforced[network]"}},
    {"the command's argv is compared whole",
     [](json& b) {
       b["admission"]["command"]["argv"][2] = "make -j2";
       b["commands"][0]["argv"][2] = "make -j2";
     },
     false,
     false,
     true,
     true,
     {"admission.command.argv", "commands[job].argv"}},
    {"an output changed, one added: each named once by path",
     [](json& b) {
       b["outputs"][1]["sha256"] = "f9";
       b["outputs"].insert(b["outputs"].begin(),
                           json{{"path", "0"}, {"size", 1}, {"sha256", "f0"}});
       b["outputs_total"] = 3;
       b["outputs_list_sha256"] = "l2";
     },
     false,
     true,
     true,
     false,
     {"outputs[0]", "outputs[b]", "outputs_total", "outputs_list_sha256"}},
    {"an OOM kill is an outcome, the memory backend the environment",
     [](json& b) {
       b["memory"]["events"]["oom_kill"] = 1;
       b["memory"]["backend"] = "cgroup-v1";
     },
     false,
     true,
     false,
     false,
     {"memory.events.oom_kill", "memory.backend"}},
    {"repeated cleanup actions are matched in order; a failed one is an outcome",
     [](json& b) { b["cleanup"][1]["result"] = "failed"; },
     false,
     true,
     true,
     false,
     {"cleanup[bwrap cleanup#2].result"}},
    {"another sealrun, another signer",
     [](json& b) {
       b["sealrun_version"]["commit"] = "c1";
       b["signing"] = {{"key_id", "k"}, {"envelope", "receipt.dsse.json"}};
     },
     false,
     true,
     false,
     true,
     {"sealrun_version.commit", "signing"}},
    {"a field this version does not know counts as an outcome",
     [](json& b) { b["limits_seen"] = {"pids"}; },
     false,
     true,
     true,
     false,
     {"limits_seen"}},
};

TEST(ReceiptDiff, EachChangeHasItsVerdictAndItsDifferences) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    json a = receipt_of("r1");
    json b = receipt_of("r2");
    c.change(b);
    Result r = compare(a, b, c.all);
    EXPECT_EQ(r.same_inputs, c.same_inputs);
    EXPECT_EQ(r.same_environment, c.same_environment);
    EXPECT_EQ(r.same_outputs, c.same_outputs);
    EXPECT_EQ(paths_of(r), c.paths) << to_text(r, true);
    if (!c.all) {
      EXPECT_GT(r.per_run_left_out, 0u);  // at least the id
    }
  }
}

TEST(ReceiptDiff, TheFirstLineSaysWhichOfTheThreeDiffer) {
  json a = receipt_of("r1");
  EXPECT_EQ(to_text(compare(a, receipt_of("r2"), false), false).substr(0, 44),
            "same inputs, same environment, same outputs\n");
  json b = receipt_of("r2");
  b["admission_sha256"] = "bb";
  b["exit"] = 5;
  EXPECT_EQ(verdict_line(compare(a, b, false)),
            "different inputs, same environment, different outputs");
}

TEST(ReceiptDiff, JsonCarriesPlainValues) {
  json a = receipt_of("r1");
  json b = receipt_of("r2");
  b["admission"]["inputs"][2]["digest"]["sha256"] = "t2";
  b["exit"] = 5;
  b["grant"]["probe"] = nullptr;
  b["outputs"].erase(0);
  json j = to_json(compare(a, b, false));
  EXPECT_EQ(j["same"], false);
  EXPECT_EQ(j["same_inputs"], false);
  EXPECT_EQ(j["same_environment"], false);
  EXPECT_EQ(j["same_outputs"], false);
  std::map<std::string, json> by_path;
  for (const auto& d : j["differences"]) by_path[d["path"].get<std::string>()] = d;
  EXPECT_EQ(by_path["admission.inputs[tree:/data].digest.sha256"],
            (json{{"path", "admission.inputs[tree:/data].digest.sha256"},
                  {"class", "inputs"},
                  {"change", "changed"},
                  {"a", "t1"},
                  {"b", "t2"}}));
  EXPECT_EQ(by_path["exit"]["a"], 0);
  EXPECT_EQ(by_path["exit"]["b"], 5);
  EXPECT_TRUE(by_path["grant.probe"]["b"].is_null());
  EXPECT_TRUE(by_path["grant.probe"]["a"].is_object());
  EXPECT_EQ(by_path["outputs[a]"]["change"], "removed");
  EXPECT_EQ(by_path["outputs[a]"]["a"], (json{{"path", "a"}, {"size", 1}, {"sha256", "f1"}}));
  EXPECT_TRUE(by_path["outputs[a]"]["b"].is_null());
}

TEST(ReceiptDiff, WhatAReceiptSaysIsEscapedForAPerson) {
  json a = receipt_of("r1");
  json b = receipt_of("r2");
  b["reason"] = "job said \033[2J\nfake: same inputs\u202e";
  b["outputs"].push_back({{"path", "\033]0;title\a"}, {"size", 1}, {"sha256", "f3"}});
  b["outputs"].push_back({{"path", "l\\xff"}, {"path_b64", "bP8="}, {"size", 1}, {"sha256", "f"}});
  b["view"].push_back({{"job_path", "/x\n\033[1m"}, {"kind", "tree"}, {"pin", "sha256:x"}});
  Result r = compare(a, b, false);
  std::string text = to_text(r, false);
  EXPECT_EQ(text.find('\033'), std::string::npos) << text;
  EXPECT_EQ(text.find('\a'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos) << text;  // U+202E
  EXPECT_EQ(text.find("\nfake"), std::string::npos) << text;
  EXPECT_NE(text.find("output added: \\x1b]0;title\\x07"), std::string::npos) << text;
  EXPECT_NE(text.find("output added: l\\xff"), std::string::npos) << text;
  EXPECT_NE(text.find("view[/x\\n\\x1b[1m] (only in B)"), std::string::npos) << text;
  // In JSON the name that is not UTF-8 is given by its bytes too.
  json j = to_json(r);
  bool found = false;
  for (const auto& d : j["differences"])
    if (d.contains("path_b64")) found = d["path_b64"] == "bP8=" && d["path"] == "outputs[l\\xff]";
  EXPECT_TRUE(found) << j.dump();
}

TEST(ReceiptDiff, TheRunIdIsMaskedOnlyWhereItNamesARunPlace) {
  struct {
    const char* in;
    const char* id;
    const char* out;
  } cases[] = {
      {"/state/results/r1/out", "r1", "/state/results/<id>/out"},
      {"/state/exports/r1.3567.671581/source", "r1", "/state/exports/<id>.<n>/source"},
      {"/state/owned/r1", "r1", "/state/owned/<id>"},
      {"/state/owned/r10/x", "r1", "/state/owned/r10/x"},              // another id
      {"/state/owned/xr1/x", "r1", "/state/owned/xr1/x"},              // not a whole component
      {"/state/owned/r1.img", "r1", "/state/owned/r1.img"},            // not .<pid>.<n>
      {"/state/owned/r1+out/out", "r1", "/state/owned/<id>+out/out"},  // its result space
      {"/state/owned/r1+out", "r1", "/state/owned/<id>+out"},
      {"/state/owned/r1+outx/out", "r1", "/state/owned/r1+outx/out"},
      {"/state/refusals/r1", "r1", "/state/refusals/<id>"},
      {"r1", "r1", "r1"},  // no path: left alone
      {"/a/results/r1/b/owned/r1", "r1", "/a/results/<id>/b/owned/<id>"},
      {"/a/results/r1", "", "/a/results/r1"},
      {"/usr/bin:/bin", "usr", "/usr/bin:/bin"},  // an id may be any word: not a run's place
      {"usr/lib", "usr", "usr/lib"},
      {"/var/r1/x", "r1", "/var/r1/x"},
  };
  for (const auto& c : cases) EXPECT_EQ(mask_run_id(c.in, c.id), c.out) << c.in;
}

TEST(ReceiptDiff, EveryReceiptFieldHasAClass) {
  std::set<std::string> classified;
  for (const auto& t : top_level_classes()) classified.insert(std::string(t.field));
  for (const auto& f : kReceiptFields)
    EXPECT_TRUE(classified.count(std::string(f.key)))
        << f.key << " has no class for `receipt diff`: add it to receipt_diff_rules.cc";
  // The writer's timings are per-run here too.
  for (const auto& f : kReceiptFields)
    if (f.role == FieldRole::kTiming) {
      EXPECT_EQ(class_of(f.key, json()), Class::kPerRun) << f.key;
    }
}

}  // namespace
}  // namespace sealrun::receipt::diff
