// SPDX-License-Identifier: Apache-2.0
// check_action(): see action_request.h. Each rule is one check with one message; the first broken
// rule is reported (a request from bb_worker is machine-made, so one precise complaint is enough).
#include "remote/action_request.h"

#include <fmt/format.h>

#include <charconv>

#include "admission/document.h"
#include "admission/path_rules.h"

namespace sealrun::remote {

namespace {

// For messages: a field's value, cut and with control bytes escaped.
std::string shown(const std::string& value) {
  std::string out;
  for (char c : value.substr(0, 120)) {
    auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? fmt::format("\\x{:02x}", u) : std::string(1, c);
  }
  return value.size() > 120 ? out + "…" : out;
}

bool has_nul(const std::string& s) { return s.find('\0') != std::string::npos; }

}  // namespace

Status check_confined(const ActionFields& f) {
  const std::string& root = f.input_root_directory;
  size_t slash = root.rfind('/');
  if (slash == std::string::npos)
    return Error::make(fmt::format(
        "input_root_directory \"{}\": its parent is the build directory itself, so the action has "
        "no directory of its own to hold its other paths (use <action>/root)",
        shown(root)));
  const std::string dir = root.substr(0, slash);
  const std::pair<const char*, const std::string*> paths[] = {
      {"stdout_path", &f.stdout_path},
      {"stderr_path", &f.stderr_path},
      {"server_logs_directory", &f.server_logs_directory},
      {"temporary_directory", &f.temporary_directory}};
  for (const auto& [field, path] : paths) {
    if (path->empty()) continue;  // only temporary_directory may be
    if (path->compare(0, dir.size() + 1, dir + "/") != 0)
      return Error::make(fmt::format(
          "{} \"{}\": outside the action's directory \"{}\" (the parent of its input root); "
          "another action's files may be there",
          field, shown(*path), shown(dir)));
    if (admission::paths_overlap(*path, root))
      return Error::make(fmt::format("{} \"{}\": in or around the input root \"{}\"", field,
                                     shown(*path), shown(root)));
  }
  return ok_status();
}

std::string action_directory(const ActionFields& f) {
  const std::string& root = f.input_root_directory;
  size_t slash = root.rfind('/');
  if (!check_build_path("input_root_directory", root, false) || slash == std::string::npos)
    return "";
  return root.substr(0, slash);
}

Status check_build_path(const std::string& field, const std::string& path, bool may_be_empty) {
  if (path.empty()) {
    if (may_be_empty) return ok_status();
    return Error::make(field + ": empty (a path relative to the build directory is required)");
  }
  if (has_nul(path)) return Error::make(field + ": contains a NUL byte");
  if (path[0] == '/')
    return Error::make(fmt::format("{} \"{}\": absolute; paths are relative to the build directory",
                                   field, shown(path)));
  if (auto why = admission::relative_path_problem(path))
    return Error::make(fmt::format("{} \"{}\": {}", field, shown(path), *why));
  return ok_status();
}

Result<CheckedAction> check_action(const ActionFields& f, const std::string& source_mount,
                                   const std::string& job_tmp) {
  CheckedAction a;
  if (f.arguments.empty() || f.arguments[0].empty())
    return Error::make("arguments: empty (the action names no program)");
  if (f.arguments.size() > kMaxArguments)
    return Error::make(fmt::format("arguments: {} of them, more than the limit of {}",
                                   f.arguments.size(), kMaxArguments));
  if (f.environment_variables.size() > kMaxEnvironment)
    return Error::make(fmt::format("environment_variables: {} of them, more than the limit of {}",
                                   f.environment_variables.size(), kMaxEnvironment));
  size_t bytes = 0;
  for (size_t i = 0; i < f.arguments.size(); ++i) {
    if (has_nul(f.arguments[i]))
      return Error::make(fmt::format("arguments[{}]: contains a NUL byte", i));
    bytes += f.arguments[i].size() + 1;
  }
  for (const auto& [name, value] : f.environment_variables) {
    if (!admission::is_env_name(name))
      return Error::make(fmt::format(
          "environment_variables \"{}\": not a variable name (letters, digits and '_', not "
          "starting with a digit)",
          shown(name)));
    if (has_nul(value))
      return Error::make(
          fmt::format("environment_variables {}: the value contains a NUL byte", name));
    bytes += name.size() + value.size() + 2;
  }
  if (bytes > kMaxCommandBytes)
    return Error::make(
        fmt::format("arguments and environment_variables: {} bytes, more than the limit of {}",
                    bytes, kMaxCommandBytes));

  SEALRUN_TRY(check_build_path("input_root_directory", f.input_root_directory));
  SEALRUN_TRY(check_build_path("stdout_path", f.stdout_path));
  SEALRUN_TRY(check_build_path("stderr_path", f.stderr_path));
  SEALRUN_TRY(check_build_path("server_logs_directory", f.server_logs_directory));
  SEALRUN_TRY(check_build_path("temporary_directory", f.temporary_directory, true));
  // Relative to the input root, which is the job's source mount.
  SEALRUN_TRY(check_build_path("working_directory", f.working_directory, true));
  if (f.stdout_path == f.stderr_path)
    return Error::make("stdout_path and stderr_path: the same file");
  SEALRUN_TRY(check_confined(f));

  a.argv = f.arguments;
  a.env = f.environment_variables;
  if (auto it = a.env.find("SOURCE_DATE_EPOCH"); it != a.env.end()) {
    // An admission pins SOURCE_DATE_EPOCH as a number of its own; an action that sets it gets it.
    const std::string& text = it->second;
    int64_t epoch = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), epoch);
    if (ec != std::errc() || end != text.data() + text.size() || epoch < 0 ||
        static_cast<uint64_t>(epoch) > admission::kMaxSourceDateEpoch)
      return Error::make(fmt::format(
          "environment_variables SOURCE_DATE_EPOCH \"{}\": expected seconds since the epoch "
          "(0 to {})",
          shown(text), admission::kMaxSourceDateEpoch));
    a.source_date_epoch = epoch;
    a.env.erase(it);
  }
  if (!a.env.count("TMPDIR")) a.env["TMPDIR"] = job_tmp;
  a.working_directory = f.working_directory;
  a.cwd = f.working_directory.empty() ? source_mount : source_mount + "/" + f.working_directory;
  a.stdout_path = f.stdout_path;
  a.stderr_path = f.stderr_path;
  a.input_root = f.input_root_directory;
  a.temporary_directory = f.temporary_directory;
  a.server_logs = f.server_logs_directory;
  return a;
}

}  // namespace sealrun::remote
