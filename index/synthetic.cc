// SPDX-License-Identifier: Apache-2.0
// Synthetic signed nodes (synthetic.h).
#include "index/synthetic.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "attest/dsse.h"
#include "attest/ledger.h"
#include "attest/openssl_util.h"

namespace sealrun::index::synthetic {

using nlohmann::json;
namespace fs = std::filesystem;

std::string toolchain_digest(int k) {
  return attest::sha256_hex_of(fmt::format("toolchain {}", k));
}
std::string closure_digest(const std::string& node, uint64_t seq) {
  return attest::sha256_hex_of(fmt::format("closure {} {}", node, seq));
}
std::string output_digest(const std::string& node, uint64_t seq) {
  return attest::sha256_hex_of(fmt::format("output {} {}", node, seq));
}

namespace {

Status write(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  f.close();
  if (!f) return Error::make("cannot write " + path);
  return ok_status();
}

std::string timestamp(uint64_t seq, int offset_ms) {
  // 2026-11-01 plus one minute per run: stays in the ledger's format.
  return attest::ledger_timestamp(1'793'491'200 + static_cast<int64_t>(seq) * 60)
      .replace(20, 3, fmt::format("{:03}", offset_ms));
}

json receipt_of(const std::string& node, uint64_t seq, const std::string& key_id,
                const std::string& outputs_jsonl) {
  std::string id = fmt::format("run-{}", seq);
  std::string admission = attest::sha256_hex_of(fmt::format("admission {}", seq % 100));
  std::string source = attest::sha256_hex_of(fmt::format("source {} {}", node, seq / 10));
  std::string tc = toolchain_digest(static_cast<int>(seq % 10));
  std::string tree = attest::sha256_hex_of("busybox tree");
  std::string closure = closure_digest(node, seq);
  json inputs = json::array(
      {{{"name", "source"},
        {"uri", "file:///srv/src/" + node},
        {"digest", {{"sealrun_sourceManifestV1", source}}},
        {"annotations", {{"kind", "source"}, {"source_kind", "tree"}, {"job_path", "/src"}}}},
       {{"name", "toolchain:/opt/tc"},
        {"uri", "file:///opt/tc"},
        {"digest", {{"sealrun_semanticTreeV1", tc}}},
        {"annotations", {{"kind", "toolchain"}, {"job_path", "/opt/tc"}}}},
       {{"name", "tree:/bin"},
        {"uri", "file:///srv/busybox-bin"},
        {"digest", {{"sealrun_semanticTreeV1", tree}}},
        {"annotations", {{"kind", "tree"}, {"job_path", "/bin"}}}},
       {{"name", "closure:/usr/lib/libfoo.so.1"},
        {"uri", "file:///usr/lib/libfoo.so.1"},
        {"digest", {{"sha256", closure}}},
        {"annotations", {{"kind", "closure"}}}}});
  json verifications = json::array();
  for (const char* t : {"admission", "source", "toolchain", "tree /bin", "host_files"})
    verifications.push_back({{"target", t},
                             {"expected", "sha256:" + tc},
                             {"observed", "sha256:" + tc},
                             {"result", "pass"}});
  json view = json::array({{{"job_path", "/src"},
                            {"kind", "source"},
                            {"host_path", "/srv/src"},
                            {"pin", "sha256:" + source},
                            {"writable", false}},
                           {{"job_path", "/opt/tc"},
                            {"kind", "toolchain"},
                            {"host_path", "/opt/tc"},
                            {"pin", "sha256:" + tc},
                            {"writable", false}},
                           {{"job_path", "/etc/passwd"},
                            {"kind", "generated"},
                            {"host_path", "/run/x/passwd"},
                            {"pin", "sha256:" + attest::sha256_hex_of("passwd")},
                            {"writable", false}},
                           {{"job_path", "/out"},
                            {"kind", "out"},
                            {"host_path", "/state/out"},
                            {"pin", nullptr},
                            {"writable", true}}});
  json outputs = json::array();
  for (size_t s = 0, e; (e = outputs_jsonl.find('\n', s)) != std::string::npos; s = e + 1)
    outputs.push_back(json::parse(outputs_jsonl.substr(s, e - s)));
  return {{"schema", "sealrun-receipt-v1"},
          {"id", id},
          {"state", "built"},
          {"exit", 0},
          {"reason", "the job exited 0 and every check passed"},
          {"admission_sha256", admission},
          {"admission",
           {{"sha256", admission},
            {"command",
             {{"argv", {"/bin/sh", "-c", "make -j2 && cp app /out/bin/app"}}, {"cwd", "/src"}}},
            {"inputs", inputs}}},
          {"signing", {{"key_id", key_id}, {"envelope", "receipt.dsse.json"}}},
          {"started", timestamp(seq, 0)},
          {"finished", timestamp(seq, 500)},
          {"verifications", verifications},
          {"view", view},
          {"grant", {{"mechanism", "bwrap"}, {"mode", "enforcing"}}},
          {"outputs", outputs},
          {"outputs_total", outputs.size()},
          {"outputs_list_sha256", attest::sha256_hex_of(outputs_jsonl)},
          {"outputs_bytes", 4096 + 120},
          {"truncated", json::array()},
          {"notes", json::array()}};
}

}  // namespace

Status add_runs(const std::string& state_dir, const std::string& node,
                const attest::SigningKey& key, uint64_t count) {
  std::error_code ec;
  fs::create_directories(state_dir + "/results", ec);
  if (ec) return Error::make("cannot make " + state_dir + ": " + ec.message());
  auto dir = SEALRUN_TRY(attest::open_state_dir(state_dir));
  uint64_t seq = 0;
  std::string prev = attest::kGenesisPrevSha256;
  auto report = attest::verify_ledger(dir.get());
  if (report) {
    if (!report->ok()) return Error::make(state_dir + ": the ledger is broken already");
    seq = report->lines;
    prev = report->head_sha256;
  }
  std::string lines;
  for (uint64_t i = 0; i < count; ++i) {
    ++seq;
    std::string id = fmt::format("run-{}", seq);
    std::string rdir = state_dir + "/results/" + id;
    fs::create_directories(rdir, ec);
    if (ec) return Error::make("cannot make " + rdir);
    std::string outputs_jsonl =
        json({{"path", "bin/app"}, {"sha256", output_digest(node, seq)}, {"size", 4096}}).dump() +
        "\n" +
        json({{"path", "share/doc/README"},
              {"sha256", attest::sha256_hex_of("readme")},
              {"size", 120}})
            .dump() +
        "\n";
    std::string receipt = receipt_of(node, seq, key.key_id(), outputs_jsonl).dump(2) + "\n";
    std::string envelope = SEALRUN_TRY(attest::sign_receipt(key, receipt));
    SEALRUN_TRY(write(rdir + "/receipt.json", receipt));
    SEALRUN_TRY(write(rdir + "/receipt.dsse.json", envelope));
    SEALRUN_TRY(write(rdir + "/outputs.jsonl", outputs_jsonl));
    attest::LedgerEntry e{
        seq, id, "built", attest::sha256_hex_of(receipt), prev, timestamp(seq, 600)};
    std::string line = attest::format_ledger_line(e);
    prev = attest::sha256_hex_of(line);
    lines += line;
  }
  std::ofstream ledger(state_dir + "/ledger.jsonl", std::ios::binary | std::ios::app);
  ledger << lines;
  ledger.close();
  if (!ledger) return Error::make("cannot append to " + state_dir + "/ledger.jsonl");
  return ok_status();
}

}  // namespace sealrun::index::synthetic
