// SPDX-License-Identifier: Apache-2.0
// demo_admission(): see demo_admission.h.
#include "controller/cli/demo_admission.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "admission/freeze.h"
#include "controller/cli/demo_unprivileged.h"
#include "controller/run/learn_freeze.h"
#include "core/bounded_file.h"
#include "core/process.h"
#include "fingerprint/sha256.h"

namespace sealrun::cli {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxAdmissionRead = 1024 * 1024;

// The request both ways share: the example's build script, its limits, bwrap pinned as a host tool.
admission::FreezeRequest demo_request(const std::string& source, const std::string& out_dir,
                                      const std::string& state_dir) {
  admission::FreezeRequest freeze;
  freeze.out = out_dir + "/admission.json";
  freeze.force = true;  // the demo's own file
  freeze.source = source;
  freeze.state_dir = state_dir;
  if (auto bwrap = find_program("bwrap"); bwrap) freeze.host_tools.push_back(*bwrap);
  // /usr/bin/cc is a link through /etc/alternatives; naming gcc keeps the closure smaller.
  freeze.env = {"PATH=/usr/bin:/bin", "CC=gcc"};
  freeze.sets = {"limits.wall_clock_s=300", "limits.outer_s=600", "limits.census_interval_ms=1000"};
  freeze.argv = {"/bin/sh", "build.sh"};
  return freeze;
}

// An admission an earlier demo learned for this example: its bytes and SHA-256, or nothing.
std::optional<DemoAdmission> earlier_learned(const std::string& path, const std::string& source) {
  auto bytes = read_bounded_file(AT_FDCWD, path, kMaxAdmissionRead);
  if (!bytes) return std::nullopt;
  auto doc = nlohmann::json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("host_files") || !doc.contains("source") ||
      !doc["source"].is_object() || doc["source"].value("path", "") != source)
    return std::nullopt;
  return DemoAdmission{path, sha256_hex(*bytes), true, true};
}

}  // namespace

Result<DemoAdmission> demo_admission(const std::string& source, const std::string& out_dir,
                                     const std::string& state_dir, bool relearn,
                                     const std::function<void(const std::string&)>& say) {
  admission::FreezeRequest freeze = demo_request(source, out_dir, state_dir);
  // Learning watches file accesses with fanotify, which needs root: without it, the compiler's
  // own directories are pinned instead (demo_unprivileged.h).
  if (::geteuid() != 0) return unprivileged_demo_admission(std::move(freeze), say);
  if (!relearn)
    if (auto earlier = earlier_learned(freeze.out, source)) {
      say(fmt::format("1/3 freeze: reusing the closure learned earlier ({})\n", freeze.out));
      return *earlier;
    }
  // No toolchain: everything the build uses is in the learned closure, which is the toolchain.
  say(fmt::format(
      "1/3 freeze: learning what building {} reads of this host (the job will see only that)\n",
      source));
  auto learned = SEALRUN_TRY_CTX(freeze_learned(freeze, LearnOptions{}), "freeze --learn");
  say(fmt::format(
      "    learned {} host files, {} links, {} directories in {} ms; hashed in {} ms; the proving "
      "run built it again in the learned view in {} ms\n",
      learned.files, learned.links, learned.dirs, learned.learn_ms, learned.hash_ms,
      learned.prove_ms));
  return DemoAdmission{learned.path, learned.sha256, true, false};
}

}  // namespace sealrun::cli
