// SPDX-License-Identifier: Apache-2.0
// check_job_can_exec(): see view_exec_check.h.
#include "controller/run/view_exec_check.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>

#include <optional>

#include "containment/exec_header.h"
#include "containment/view_lookup.h"
#include "containment/view_plan.h"
#include "core/syscall.h"

namespace sealrun::run {

namespace {

using Found = ViewLookup::Found;

// execvp's search when the job's environment has no PATH (glibc's default).
constexpr const char* kDefaultExecPath = "/bin:/usr/bin";

std::string absolute_in_job(const std::string& path, const std::string& cwd) {
  if (!path.empty() && path[0] == '/') return path;
  return (cwd.empty() || cwd.back() != '/' ? cwd + "/" : cwd) + path;
}

// argv[0] as execvp finds it in the view: a path as it is (relative to cwd), a bare name along
// PATH (the first regular file). nullopt: not certainly found (left to the exec).
std::optional<ViewLookup> find_in_view(const std::vector<ViewEntry>& view, const std::string& arg0,
                                       const std::map<std::string, std::string>& env,
                                       const std::string& cwd) {
  if (arg0.find('/') != std::string::npos) {
    ViewLookup l = lookup_in_view(view, absolute_in_job(arg0, cwd));
    if (l.found == Found::kFile) return l;
    return std::nullopt;
  }
  auto it = env.find("PATH");
  const std::string path = it == env.end() ? kDefaultExecPath : it->second;
  size_t at = 0;
  while (at <= path.size()) {
    size_t colon = path.find(':', at);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(at, colon - at);
    at = colon + 1;
    if (dir.empty()) dir.assign(1, '.');  // the current directory (not = ".": GCC 12 warns)
    ViewLookup l = lookup_in_view(view, absolute_in_job(dir + "/" + arg0, cwd));
    if (l.found == Found::kFile) return l;
    if (l.found == Found::kUnknown) return std::nullopt;  // it might be there: not ours to say
  }
  return std::nullopt;
}

std::optional<ExecHeader> header_of(const std::string& host_path) {
  auto fd = open_at(AT_FDCWD, host_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (!fd) return std::nullopt;
  auto h = read_exec_header(fd->get());
  if (!h) return std::nullopt;
  return *h;
}

// What to pin for a missing `path`: the host directory that holds it, links resolved
// (/lib64/ld-linux-x86-64.so.2 on a merged-/usr host: /usr/lib64).
std::string what_to_pin(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  char resolved[PATH_MAX];
  if (::realpath(dir.c_str(), resolved) != nullptr) return resolved;
  return dir;
}

Status refuse(const std::string& missing, const std::string& what, const std::string& of) {
  const std::string dir = what_to_pin(missing);
  return Error::make(fmt::format(
      "the view has no {} ({} of {}): pin {} (admit freeze --tree {}) or learn the closure "
      "(admit freeze --learn)",
      missing, what, of, dir, dir));
}

}  // namespace

Status check_job_can_exec(const std::vector<ViewEntry>& view, const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, const std::string& cwd) {
  if (argv.empty()) return ok_status();
  auto program = find_in_view(view, argv[0], env, cwd);
  if (!program) return ok_status();
  auto header = header_of(program->host_path);
  if (!header || header->interpreter.empty()) return ok_status();
  std::string of = argv[0];
  if (header->kind == ExecHeader::Kind::kScript) {
    // The `#!` line, followed once: its program must be there and be able to start itself.
    const std::string script_interp = absolute_in_job(header->interpreter, cwd);
    ViewLookup interp = lookup_in_view(view, script_interp);
    if (interp.found == Found::kMissing)
      return refuse(script_interp, "the interpreter on the #! line", argv[0]);
    if (interp.found != Found::kFile) return ok_status();
    header = header_of(interp.host_path);
    if (!header || header->kind != ExecHeader::Kind::kElf || header->interpreter.empty())
      return ok_status();
    of = script_interp;
  }
  if (header->kind != ExecHeader::Kind::kElf) return ok_status();
  const std::string loader = absolute_in_job(header->interpreter, cwd);
  if (lookup_in_view(view, loader).found == Found::kMissing)
    return refuse(loader, "the ELF interpreter", of);
  return ok_status();
}

Status check_spec_can_exec(const ContainmentSpec& spec) {
  if (spec.image) return ok_status();
  return check_job_can_exec(plan_view(spec, ViewRoot::kEmptyTmpfs), spec.argv, spec.env, spec.cwd);
}

}  // namespace sealrun::run
