// SPDX-License-Identifier: Apache-2.0
// validate_spec(): the gate every ContainmentSpec passes before a mechanism sees it. It is pure
// (no file system access): it checks the shape of the request, not the host. The mount rules are
// the ones that keep a job from being handed a writable view of the system: targets are absolute
// and already normalised (so "/usr/../tmp" cannot smuggle a reserved path past a prefix check), and
// a writable target may neither be a reserved system directory nor lie below one.
#include "containment/spec.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "core/run_id.h"

namespace sealrun {

namespace {

// System directories a job must never be able to write, nor receive a writable mount inside.
constexpr std::array<std::string_view, 15> kReservedTargets = {
    "/",     "/etc", "/usr", "/proc", "/dev",  "/sys", "/bin", "/sbin",
    "/boot", "/run", "/var", "/root", "/home", "/srv", "/opt",
};

bool is_env_name(std::string_view name) {
  if (name.empty()) return false;
  auto head = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!head(name[0])) return false;
  for (char c : name.substr(1))
    if (!head(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

// Absolute, no empty component ("//"), no "." or ".." component, no trailing slash (except "/"),
// no NUL. Such a path means exactly what it says, so prefix comparisons on it are sound.
Status check_normalised_path(std::string_view path, std::string_view what) {
  if (path.empty() || path[0] != '/')
    return Error::make(fmt::format("{} \"{}\" must be an absolute path", what, path));
  if (path.find('\0') != std::string_view::npos)
    return Error::make(fmt::format("{} contains a NUL byte", what));
  if (path == "/") return ok_status();
  if (path.back() == '/')
    return Error::make(fmt::format("{} \"{}\" has a trailing slash; write it without", what, path));
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view comp = path.substr(start, end - start);
    if (comp.empty())
      return Error::make(fmt::format("{} \"{}\" contains \"//\"; normalise it", what, path));
    if (comp == "." || comp == "..")
      return Error::make(
          fmt::format("{} \"{}\" contains a \"{}\" component; normalise it", what, path, comp));
    start = end + 1;
  }
  return ok_status();
}

bool is_reserved_or_below(std::string_view target) {
  for (auto reserved : kReservedTargets) {
    if (target == reserved) return true;
    if (reserved == "/") continue;  // "/" is reserved only as itself (else every path would be)
    if (target.size() > reserved.size() && target.substr(0, reserved.size()) == reserved &&
        target[reserved.size()] == '/')
      return true;
  }
  // /lib, /lib64, /lib32, /libx32, ...: every top-level "lib*" directory.
  std::string_view top = target.substr(0, target.find('/', 1));
  return top.substr(0, 4) == "/lib";
}

}  // namespace

std::string_view view_kind_name(ViewKind kind) {
  switch (kind) {
    case ViewKind::kSource:
      return "source";
    case ViewKind::kToolchain:
      return "toolchain";
    case ViewKind::kTree:
      return "tree";
    case ViewKind::kImage:
      return "image";
    case ViewKind::kClosure:
      return "closure";
    case ViewKind::kOut:
      return "out";
    case ViewKind::kScratch:
      return "scratch";
    case ViewKind::kTmp:
      return "tmp";
    case ViewKind::kProc:
      return "proc";
    case ViewKind::kDev:
      return "dev";
    case ViewKind::kLink:
      return "link";
    case ViewKind::kSys:
      return "sys";
    case ViewKind::kGenerated:
      return "generated";
    case ViewKind::kInit:
      return "init";
    case ViewKind::kDir:
      return "dir";
  }
  return "?";
}

std::vector<std::string_view> reserved_mount_targets() {
  std::vector<std::string_view> out(kReservedTargets.begin(), kReservedTargets.end());
  out.push_back("/lib*");
  return out;
}

Status validate_spec(const ContainmentSpec& spec) {
  if (!is_valid_run_id(spec.run_id))
    return Error::make(fmt::format(
        "run id \"{}\" is not 1-64 characters of [A-Za-z0-9._-] (and not \".\" or \"..\")",
        spec.run_id));
  if (spec.argv.empty() || spec.argv[0].empty())
    return Error::make("the job's argv is empty; give the command to run");
  for (const auto& arg : spec.argv)
    if (arg.find('\0') != std::string::npos)
      return Error::make("an argv element contains a NUL byte");
  if (!spec.owned_root.empty()) SEALRUN_TRY(check_normalised_path(spec.owned_root, "owned root"));
  SEALRUN_TRY(check_normalised_path(spec.cwd, "working directory"));
  // A hostname is an argument of bwrap and podman: one DNS label-ish word, nothing else.
  if (spec.hostname.empty() || spec.hostname.size() > 63 ||
      spec.hostname.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789-.") != std::string::npos)
    return Error::make(fmt::format("hostname {:?} is not 1-63 of [A-Za-z0-9.-]", spec.hostname));
  if (spec.umask && *spec.umask > 0777)
    return Error::make(fmt::format("umask {:o} is not a permission mask (0-0777)", *spec.umask));

  DimensionSet missing = spec.required - spec.requested;
  if (!missing.empty())
    return Error::make(fmt::format(
        "required dimension(s) {} are not requested; a dimension must be requested to be required",
        missing.joined()));

  struct Limit {
    const char* name;
    int64_t value;
  };
  const Limit limits[] = {
      {"memory_high_bytes", static_cast<int64_t>(spec.memory_high_bytes)},
      {"memory_max_bytes", static_cast<int64_t>(spec.memory_max_bytes)},
      {"pids_max", static_cast<int64_t>(spec.pids_max)},
      {"wall_clock_ms", spec.wall_clock_ms},
      {"stop_grace_ms", spec.stop_grace_ms},
  };
  // The unsigned limits are cast so that a value that wrapped from a negative number (2^64 - 1)
  // is caught as non-positive too.
  for (const auto& l : limits)
    if (l.value <= 0)
      return Error::make(fmt::format("limit {} must be positive (got {})", l.name, l.value));
  if (spec.memory_high_bytes > spec.memory_max_bytes)
    return Error::make(fmt::format("memory_high_bytes ({}) exceeds memory_max_bytes ({})",
                                   spec.memory_high_bytes, spec.memory_max_bytes));

  for (const auto& [name, value] : spec.env) {
    if (!is_env_name(name))
      return Error::make(
          fmt::format("environment name \"{}\" is not [A-Za-z_][A-Za-z0-9_]*", name));
    if (value.find('\0') != std::string::npos)
      return Error::make(fmt::format("environment variable {} contains a NUL byte", name));
  }

  for (const auto& m : spec.mounts) {
    SEALRUN_TRY(check_normalised_path(m.source, "mount source"));
    SEALRUN_TRY(check_normalised_path(m.target, "mount target"));
    if (m.target == "/")
      return Error::make("mount target \"/\" is reserved: the job's root is built by containment");
    if (m.access == MountSpec::Access::kWritable && is_reserved_or_below(m.target))
      return Error::make(fmt::format(
          "mount target \"{}\" is a reserved system path (or below one) and cannot be writable; "
          "use /out, /scratch or another path outside the system directories",
          m.target));
    for (const auto& other : spec.mounts)
      if (&other != &m && other.target == m.target)
        return Error::make(fmt::format("mount target \"{}\" is given twice", m.target));
  }
  for (const auto& e : spec.files_and_links) {
    SEALRUN_TRY(check_normalised_path(e.job_path, "view path"));
    if (e.job_path == "/") return Error::make("view path \"/\" is the job's root");
    if (e.kind == ViewKind::kLink) {
      if (e.link_target.empty() || e.link_target.find('\0') != std::string::npos)
        return Error::make(fmt::format("link {} has an empty or NUL-bearing target", e.job_path));
    } else if (e.kind == ViewKind::kDir) {
      if (e.writable || !e.host_path.empty())
        return Error::make(
            fmt::format("view directory {} has a host path or is writable", e.job_path));
    } else if (e.kind == ViewKind::kClosure || e.kind == ViewKind::kGenerated ||
               e.kind == ViewKind::kInit) {
      SEALRUN_TRY(check_normalised_path(e.host_path, "view file"));
      if (e.writable) return Error::make(fmt::format("view file {} is writable", e.job_path));
      if (e.kind != ViewKind::kClosure && e.pin.empty())
        return Error::make(fmt::format("view file {} has no pin", e.job_path));
    } else {
      return Error::make(fmt::format(
          "view entry {} is neither a file (closure, generated, init), a link nor a directory",
          e.job_path));
    }
  }
  if (spec.image) {
    if (spec.image->image_id.rfind("sha256:", 0) != 0 || spec.image->image_id.size() != 71)
      return Error::make(
          fmt::format("image id \"{}\" is not \"sha256:<64 hex>\"", spec.image->image_id));
  }
  return ok_status();
}

}  // namespace sealrun
