// SPDX-License-Identifier: Apache-2.0
// The demo without root: see demo_unprivileged.h.
#include "controller/cli/demo_unprivileged.h"

#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "admission/unreadable.h"
#include "containment/grant.h"
#include "containment/mechanism_registry.h"
#include "containment/resgroup/resource_group.h"
#include "containment/view_plan.h"
#include "controller/common/host_config.h"
#include "core/process.h"
#include "core/syscall.h"
#include "core/unique_fd.h"

namespace sealrun::cli {

namespace fs = std::filesystem;

namespace {

// The real path of `path`, or why not.
Result<std::string> real(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::canonical(path, ec);
  if (ec) return Error::with_errno(ec.value(), "resolve " + path);
  return p.string();
}

// One line of output of `compiler ARGS`, trimmed; stderr too when `want_stderr`.
Result<std::string> ask(const std::string& compiler, std::vector<std::string> args,
                        bool want_stderr = false) {
  SpawnOptions o;
  o.argv = {compiler};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  // The job's own environment (demo_admission.cc): no LIBRARY_PATH or CPATH of the caller's.
  o.env = std::vector<std::string>{"PATH=/usr/bin:/bin", "LC_ALL=C"};
  o.stdin_fd = -1;
  auto c = SEALRUN_TRY(run_capture(std::move(o), 30000));
  if (!c.status.success())
    return Error::make(fmt::format("{} {} failed: {}", compiler, fmt::join(args, " "), c.err));
  std::string out = want_stderr ? c.err : c.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The program interpreter an ELF executable names (PT_INTERP), or nothing (static, not ELF64).
std::optional<std::string> program_interpreter(const std::string& path) {
  auto fd = open_at(AT_FDCWD, path, O_RDONLY);
  if (!fd) return std::nullopt;
  Elf64_Ehdr eh{};
  if (::pread(fd->get(), &eh, sizeof eh, 0) != static_cast<ssize_t>(sizeof eh) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_phentsize != sizeof(Elf64_Phdr))
    return std::nullopt;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    if (::pread(fd->get(), &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + i * sizeof ph)) !=
        static_cast<ssize_t>(sizeof ph))
      return std::nullopt;
    if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz > 4096) continue;
    std::string interp(ph.p_filesz, '\0');
    if (::pread(fd->get(), interp.data(), interp.size(), static_cast<off_t>(ph.p_offset)) !=
        static_cast<ssize_t>(interp.size()))
      return std::nullopt;
    interp.resize(std::strlen(interp.c_str()));
    return interp;
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> outermost_dirs(std::vector<std::string> dirs) {
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  std::vector<std::string> out;
  for (const std::string& d : dirs) {
    if (d.empty()) continue;
    // Sorted, so a directory's ancestors among `dirs` come before it; all kept ones are checked,
    // not the last ("/usr/lib-x" sorts between "/usr/lib" and "/usr/lib/y").
    bool nested = std::any_of(out.begin(), out.end(),
                              [&](const std::string& kept) { return at_or_below(d, kept); });
    if (!nested) out.push_back(d);
  }
  return out;
}

std::vector<std::string> include_dirs_from(std::string_view verbose) {
  std::vector<std::string> out;
  constexpr std::string_view kStart = "#include <...> search starts here:";
  size_t at = verbose.find(kStart);
  if (at == std::string_view::npos) return out;
  at += kStart.size();
  while (at < verbose.size()) {
    size_t end = verbose.find('\n', at);
    if (end == std::string_view::npos) end = verbose.size();
    std::string_view line = verbose.substr(at, end - at);
    at = end + 1;
    if (line.empty()) continue;
    if (line.front() != ' ') break;  // "End of search list."
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    // A framework directory is marked " (framework directory)" (macOS); not on Linux, but a
    // suffix is not part of the path.
    if (size_t mark = line.find(" ("); mark != std::string_view::npos) line = line.substr(0, mark);
    if (!line.empty()) out.emplace_back(line);
  }
  return out;
}

Result<CompilerTrees> compiler_trees(const std::string& compiler, const std::string& shell) {
  CompilerTrees out;
  const std::string driver = SEALRUN_TRY(real(compiler));
  const std::string cc1 = SEALRUN_TRY(real(SEALRUN_TRY(ask(compiler, {"-print-prog-name=cc1"}))));
  const std::string cc1_dir = fs::path(cc1).parent_path().string();
  std::vector<std::string> dirs = {cc1_dir, fs::path(driver).parent_path().string()};
  // The C library the link step uses, and with it the shared libraries beside it.
  if (auto libc = ask(compiler, {"-print-file-name=libc.so"}); libc && libc->front() == '/')
    if (auto r = real(*libc)) dirs.push_back(fs::path(*r).parent_path().string());
  auto verbose = SEALRUN_TRY(ask(compiler, {"-E", "-v", "-x", "c", "/dev/null", "-o", "/dev/null"},
                                 /*want_stderr=*/true));
  for (const std::string& inc : include_dirs_from(verbose))
    if (auto r = real(inc)) dirs.push_back(*r);  // absent ones (often /usr/local/include) skipped
  // The program interpreter, as named (/lib64/ld-linux-x86-64.so.2: a compatibility link into
  // /usr/lib64 on a merged-/usr host) and where it leads.
  for (const std::string& program : {driver, shell})
    if (auto r = real(program)) {
      dirs.push_back(fs::path(*r).parent_path().string());
      if (auto interp = program_interpreter(*r)) {
        if (auto d = real(fs::path(*interp).parent_path().string())) dirs.push_back(*d);
        if (auto f = real(*interp)) dirs.push_back(fs::path(*f).parent_path().string());
      }
    }
  // Trees must not overlap: the one holding cc1's directory is the toolchain, the rest are trees.
  for (std::string& d : outermost_dirs(std::move(dirs))) {
    if (at_or_below(cc1_dir, d))
      out.toolchain = std::move(d);
    else
      out.trees.push_back(std::move(d));
  }
  return out;
}

std::optional<DimensionSet> missing_dimensions(const std::vector<CandidateEnforcement>& candidates,
                                               const DimensionSet& required) {
  std::optional<DimensionSet> best;
  for (const CandidateEnforcement& c : candidates) {
    DimensionSet missing = required - c.enforced;
    if (missing.empty()) return std::nullopt;
    if (!best || missing.list().size() < best->list().size()) best = missing;
  }
  return best;
}

std::string missing_containment_line(const DimensionSet& missing, const std::string& user) {
  const bool group =
      missing.contains(Dimension::kMemory) || missing.contains(Dimension::kProcessCount);
  std::string verb = missing.list().size() == 1 ? "is" : "are";
  if (group)
    return fmt::format(
        "{} {} not enforceable as {} here (a resource group needs root, or a cgroup delegated "
        "to {}): run as root, or under a systemd user manager with a delegated cgroup "
        "(cgroup v2), or pass --mode report-only to build with the shortfall recorded",
        missing.joined(), verb, user, user);
  return fmt::format(
      "{} {} not enforceable as {} here: run as root, or pass --mode report-only to build with "
      "the shortfall recorded",
      missing.joined(), verb, user);
}

std::optional<DimensionSet> unprivileged_containment_gap(const std::string& state_dir,
                                                         const DimensionSet& required) {
  // As the run's grant counts them (run_stage_containment.cc): any available back end's limits.
  const GroupCapabilities groups = group_capabilities(resgroup::probe_backends());
  const DimensionSet from_groups = group_dimensions(groups);
  // What only a group can give is there: the rest is the mechanism's, and the run says if not.
  const DimensionSet group_dims{Dimension::kMemory, Dimension::kProcessCount};
  if ((group_dims & required).subset_of(from_groups)) return std::nullopt;
  auto kinds = mechanism_candidates(false, std::nullopt, std::nullopt);
  if (!kinds) return std::nullopt;
  MechanismContext context = mechanism_context();
  context.probe_cache_dir = state_dir + "/probe-cache";
  std::vector<CandidateEnforcement> candidates;
  for (MechanismKind kind : *kinds) {
    auto mechanism = make_mechanism(kind, context);
    if (!mechanism) continue;
    MechanismProbe probe = (*mechanism)->probe();
    if (!probe.available) continue;
    candidates.push_back({probe.name, enforced_dimensions(probe, groups, required)});
  }
  if (candidates.empty()) return std::nullopt;  // the run names each mechanism and why
  return missing_dimensions(candidates, required);
}

Result<DemoAdmission> unprivileged_demo_admission(
    admission::FreezeRequest freeze, const std::function<void(const std::string&)>& say) {
  const std::string compiler = SEALRUN_TRY_CTX(find_program("gcc"), "the host's C compiler");
  const std::string shell = freeze.argv.empty() ? "/bin/sh" : freeze.argv.front();
  auto trees = SEALRUN_TRY_CTX(compiler_trees(compiler, shell), "where " + compiler + " is");
  const std::string user = admission::invoking_user_name();
  std::vector<std::string> all = {trees.toolchain};
  all.insert(all.end(), trees.trees.begin(), trees.trees.end());
  // Checked before anything is hashed: a tree with one unreadable entry would fail the freeze
  // only after hashing everything before it.
  for (const std::string& dir : all) {
    auto unreadable = SEALRUN_TRY(admission::first_unreadable(dir));
    if (unreadable) return Error::make(admission::cannot_read_message(*unreadable, user));
  }
  freeze.toolchain = trees.toolchain;
  freeze.toolchain_mount = trees.toolchain;
  freeze.trees = trees.trees;
  say(fmt::format(
      "1/3 freeze: pinning {}, the compiler's directories {} and {} (the job sees nothing else)\n",
      freeze.source, trees.toolchain, fmt::join(trees.trees, ", ")));
  auto frozen = SEALRUN_TRY_CTX(admission::freeze_admission(freeze), "freeze");
  return DemoAdmission{frozen.path, frozen.sha256, false, false};
}

}  // namespace sealrun::cli
