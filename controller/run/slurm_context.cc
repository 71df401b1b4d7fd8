// SPDX-License-Identifier: Apache-2.0
// The Slurm context of a run (slurm_context.h): SLURM_* variables, checked and typed.
#include "controller/run/slurm_context.h"

#include <unistd.h>

#include <charconv>
#include <cstdint>

namespace sealrun {
namespace {

// Names and ids Slurm gives are short; anything longer is not Slurm's and is left out.
constexpr size_t kMaxValue = 256;

const std::string* find(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

const std::string* first_of(const std::map<std::string, std::string>& env, const char* a,
                            const char* b) {
  const std::string* v = find(env, a);
  return v != nullptr ? v : find(env, b);
}

std::optional<uint64_t> number(const std::string* v) {
  if (v == nullptr || v->empty() || v->size() > 20) return std::nullopt;
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || p != v->data() + v->size()) return std::nullopt;
  return n;
}

// A node, cluster, partition or user name: printable ASCII without spaces, bounded.
std::optional<std::string> name(const std::string* v) {
  if (v == nullptr || v->empty() || v->size() > kMaxValue) return std::nullopt;
  for (unsigned char c : *v)
    if (c <= 0x20 || c >= 0x7f) return std::nullopt;
  return *v;
}

void put_number(nlohmann::json& out, const char* key, const std::string* v) {
  if (auto n = number(v)) out[key] = *n;
}

void put_name(nlohmann::json& out, const char* key, const std::string* v) {
  if (auto s = name(v)) out[key] = *s;
}

}  // namespace

std::optional<nlohmann::json> slurm_context(const std::map<std::string, std::string>& env) {
  auto job = number(first_of(env, "SLURM_JOB_ID", "SLURM_JOBID"));
  if (!job) return std::nullopt;
  nlohmann::json out = nlohmann::json::object();
  out["job_id"] = *job;
  if (auto step = number(first_of(env, "SLURM_STEP_ID", "SLURM_STEPID"))) {
    out["step_id"] = std::to_string(*step);
  } else if (const std::string* e = find(env, "ENVIRONMENT"); e != nullptr && *e == "BATCH") {
    out["step_id"] = "batch";
  }
  put_name(out, "node", find(env, "SLURMD_NODENAME"));
  put_name(out, "cluster", find(env, "SLURM_CLUSTER_NAME"));
  put_name(out, "partition", find(env, "SLURM_JOB_PARTITION"));
  put_name(out, "user", find(env, "SLURM_JOB_USER"));
  put_number(out, "array_job_id", find(env, "SLURM_ARRAY_JOB_ID"));
  put_number(out, "array_task_id", find(env, "SLURM_ARRAY_TASK_ID"));
  put_number(out, "proc_id", find(env, "SLURM_PROCID"));
  put_number(out, "local_id", find(env, "SLURM_LOCALID"));
  put_number(out, "mem_per_node_mb", find(env, "SLURM_MEM_PER_NODE"));
  put_number(out, "mem_per_cpu_mb", find(env, "SLURM_MEM_PER_CPU"));
  return out;
}

std::map<std::string, std::string> environ_map() {
  std::map<std::string, std::string> out;
  for (char** e = ::environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    // Only Slurm's variables (and ENVIRONMENT) matter here; the rest is not copied.
    std::string_view key = kv.substr(0, eq);
    if (key.rfind("SLURM", 0) != 0 && key != "ENVIRONMENT") continue;
    out.emplace(std::string(key), std::string(kv.substr(eq + 1)));
  }
  return out;
}

std::string slurm_spank_advice(const std::map<std::string, std::string>& env,
                               bool process_count_missing, bool is_root) {
  if (!process_count_missing || is_root) return "";
  auto slurm = slurm_context(env);
  if (!slurm) return "";
  return "Under Slurm (job " + (*slurm)["job_id"].dump() +
         "): an ordinary user's step gets the pids group process_count needs from sealrun's SPANK "
         "plugin, spank_sealrun.so — ask the site to install it with its plugstack.conf line "
         "(contrib/slurm/README.md; docs/scale-out.md, \"Slurm\")";
}

}  // namespace sealrun
