// SPDX-License-Identifier: Apache-2.0
// run_git(): see git_run.h.
#include "fingerprint/git_run.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/process.h"

namespace sealrun {
namespace {

constexpr int64_t kGitTimeoutMs = 10 * 60 * 1000;
constexpr size_t kMaxGitOutput = 4 * 1024 * 1024;

Result<std::string> git_program() {
  // A fixed system path first: the caller's PATH should not choose which git verifies a pin.
  if (::access("/usr/bin/git", X_OK) == 0) return std::string("/usr/bin/git");
  return find_program("git");
}

std::string trim_for_message(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.size() > 600) s = s.substr(0, 600) + "...";
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

std::vector<std::string> git_environment() {
  return {"PATH=/usr/bin:/bin",       "HOME=/nonexistent",           "LC_ALL=C",
          "GIT_CONFIG_NOSYSTEM=1",    "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
          "GIT_NO_REPLACE_OBJECTS=1", "GIT_TERMINAL_PROMPT=0",       "GIT_OPTIONAL_LOCKS=0"};
}

std::vector<std::string> git_safety_options() {
  return {"--no-replace-objects", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
          // Only local paths and bundles (both are the "file" transport); never the network, ssh
          // or ext:: helpers.
          "-c", "protocol.allow=never", "-c", "protocol.file.allow=always", "-c",
          "core.autocrlf=false", "-c", "core.symlinks=true", "-c", "advice.detachedHead=false"};
}

Result<std::string> run_git(const std::vector<std::string>& args, const std::string& what) {
  SpawnOptions options;
  options.argv.push_back(SEALRUN_TRY(git_program()));
  for (const auto& o : git_safety_options()) options.argv.push_back(o);
  for (const auto& a : args) options.argv.push_back(a);
  options.env = git_environment();
  options.new_session = true;
  options.die_with_parent = true;
  auto captured = SEALRUN_TRY_CTX(run_capture(options, kGitTimeoutMs, kMaxGitOutput), what);
  if (captured.timed_out)
    return Error::make(
        fmt::format("{}: git did not finish within {} s", what, kGitTimeoutMs / 1000));
  if (!captured.status.success())
    return Error::make(fmt::format("{}: git {} ({})", what, captured.status.describe(),
                                   trim_for_message(captured.err)));
  if (captured.out.size() >= kMaxGitOutput)
    return Error::make(fmt::format("{}: git printed more than {} bytes", what, kMaxGitOutput));
  return std::move(captured.out);
}

Result<std::string> run_git_line(const std::vector<std::string>& args, const std::string& what) {
  auto out = SEALRUN_TRY(run_git(args, what));
  size_t nl = out.find('\n');
  if (nl != std::string::npos) out.resize(nl);
  return out;
}

bool is_git_object_name(const std::string& s) {
  return (s.size() == 40 || s.size() == 64) && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace sealrun
