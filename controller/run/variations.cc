// SPDX-License-Identifier: Apache-2.0
// --vary: see variations.h and docs/rebuild.md.
#include "controller/run/variations.h"

#include <fmt/format.h>

#include <utility>

namespace sealrun::run {

namespace {

bool at_or_below(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

// Each name of kVariationNames and the flag it sets, in that order.
constexpr std::pair<std::string_view, bool Variations::*> kFlags[] = {
    {"hostname", &Variations::hostname},
    {"umask", &Variations::umask},
    {"locale", &Variations::locale},
    {"timezone", &Variations::timezone},
    {"build_path", &Variations::build_path},
    {"num_cpus", &Variations::num_cpus},
    {"user_id", &Variations::user_id},
    {"time", &Variations::time},
    {"fileordering", &Variations::fileordering},
    {"kernel", &Variations::kernel},
    {"aslr", &Variations::aslr},
    {"exec_path", &Variations::exec_path},
    {"domain_host", &Variations::domain_host},
    {"home", &Variations::home},
};
static_assert(std::size(kFlags) == std::size(kVariationNames));

// An empty directory of the job's view (bwrap: --dir in its read-only root; podman's view holds
// no directories of sealrun's making).
ViewEntry empty_dir(std::string_view path) {
  return {std::string(path), ViewKind::kDir, {}, "directory", false, {}, -1};
}

// build_path: the source and the scratch space move below kVariedBuildRoot and the working
// directory with them, so getcwd() (what compilers embed) answers with the varied path; /scratch's
// admitted name becomes a link to where it is now and the source is bound at its admitted name
// too, so a job that names them still runs.
void move_build(const std::string& source_target, ContainmentSpec& spec) {
  std::vector<std::string> moved_targets;
  for (auto& m : spec.mounts) {
    bool move = at_or_below(m.target, source_target) || m.kind == ViewKind::kScratch;
    if (!move || m.target == "/") continue;
    // A mount below one already moved (a scratch inside /src) moves with it: no link of its own.
    bool inside_moved = false;
    for (const auto& t : moved_targets) inside_moved = inside_moved || at_or_below(m.target, t);
    if (!inside_moved && (m.target == source_target || m.kind == ViewKind::kScratch))
      moved_targets.push_back(m.target);
  }
  for (auto& m : spec.mounts)
    for (const auto& t : moved_targets) m.target = moved_below_build_root(m.target, t);
  std::vector<MountSpec> again;
  for (const auto& t : moved_targets) {
    spec.cwd = moved_below_build_root(spec.cwd, t);
    std::string to = std::string(kVariedBuildRoot) + t;
    if (t != source_target) {
      spec.files_and_links.push_back({t, ViewKind::kLink, {}, "symlink:" + to, false, to, -1});
      continue;
    }
    // The source's admitted name is the same mount bound a second time, not a link: `cp -a /src
    // /scratch/s` — the usual first step, which copies a command-line symlink as a symlink —
    // then copies the tree, and the build in the copy runs below the moved /scratch.
    for (const auto& m : spec.mounts)
      if (m.target == to) {
        again.push_back(m);
        again.back().target = t;
      }
  }
  for (auto& m : again) spec.mounts.push_back(std::move(m));
}

}  // namespace

bool Variations::any() const {
  for (const auto& entry : kFlags)
    if (this->*entry.second) return true;
  return false;
}

Result<Variations> parse_variations(std::string_view list) {
  Variations v;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view name = list.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    bool* flag = nullptr;
    for (const auto& [known, member] : kFlags)
      if (name == known) flag = &(v.*member);
    if (name == "all") {
      for (const auto& entry : kFlags) v.*entry.second = true;
    } else if (flag != nullptr) {
      *flag = true;
    } else {
      std::string known = "all";
      for (auto n : kVariationNames) known += fmt::format(", {}", n);
      return Error::make(fmt::format("--vary: unknown variation {:?}; known: {}", name, known));
    }
  }
  return v;
}

uint32_t varied_umask(uint32_t controller_umask) {
  return controller_umask == kVariedUmask ? 0022 : kVariedUmask;
}

std::string moved_below_build_root(const std::string& path, const std::string& from) {
  return at_or_below(path, from) ? std::string(kVariedBuildRoot) + path : path;
}

void apply_variations(const Variations& v, const std::string& source_target,
                      ContainmentSpec& spec) {
  if (v.hostname || v.domain_host) spec.hostname = std::string(kVariedHostname);
  if (v.domain_host) spec.domainname = std::string(kVariedDomainname);
  if (v.umask) spec.umask = varied_umask(v.base_umask);
  if (v.locale) {
    spec.env["LANG"] = std::string(kVariedLocale);
    spec.env["LC_ALL"] = std::string(kVariedLocale);
    spec.env["LANGUAGE"] = "fr_CH:fr";
  }
  if (v.timezone) spec.env["TZ"] = std::string(kVariedTimezone);
  if (v.build_path) move_build(source_target, spec);
  if (v.user_id) spec.uid_in_job = kVariedUid;
  if (v.kernel || v.aslr)
    spec.personality = spec.personality.value_or(0) | (v.kernel ? kPersonalityUname26 : 0) |
                       (v.aslr ? kPersonalityAddrNoRandomize : 0);
  if (v.time && !v.faketime_sha256.empty()) {
    spec.files_and_links.push_back({std::string(kFaketimeJobPath),
                                    ViewKind::kClosure,
                                    std::string(kFaketimeHostPath),
                                    "sha256:" + v.faketime_sha256,
                                    false,
                                    {},
                                    -1});
    auto preload = spec.env.find("LD_PRELOAD");
    std::string others = preload == spec.env.end() || preload->second.empty()
                             ? std::string()
                             : ":" + preload->second;
    spec.env["LD_PRELOAD"] = std::string(kFaketimeJobPath) + others;
    spec.env["FAKETIME"] = std::string(kFaketimeOffset);
    // Timeouts and sleeps measured on the monotonic clock keep working.
    spec.env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1";
  }
  if (v.exec_path) {
    auto path = spec.env.find("PATH");
    spec.env["PATH"] = path == spec.env.end() || path->second.empty()
                           ? std::string(kVariedPathDir)
                           : path->second + ":" + std::string(kVariedPathDir);
    spec.files_and_links.push_back(empty_dir(kVariedPathDir));
  }
  if (v.home) {
    spec.env["HOME"] = std::string(kVariedHome);
    spec.files_and_links.push_back(empty_dir(kVariedHome));
  }
}

nlohmann::json describe_variations(const Variations& v) {
  nlohmann::json out = nlohmann::json::array();
  auto add = [&out](std::string_view name, std::string how) {
    out.push_back({{"name", name}, {"how", std::move(how)}});
  };
  if (v.hostname)
    add("hostname",
        fmt::format("the job's UTS namespace is named {} (every run: sealrun), and so are its "
                    "generated /etc/hostname and /etc/hosts (bwrap)",
                    kVariedHostname));
  if (v.umask)
    add("umask", fmt::format("the job starts with umask {:04o} (the controller's: {:04o})",
                             varied_umask(v.base_umask), v.base_umask));
  if (v.locale)
    add("locale", fmt::format("LANG and LC_ALL={}, LANGUAGE=fr_CH:fr (the locale need not be "
                              "installed in the job: the variables are what programs read)",
                              kVariedLocale));
  if (v.timezone) add("timezone", fmt::format("TZ={}", kVariedTimezone));
  if (v.build_path)
    add("build_path",
        fmt::format("the source and /scratch are mounted below {} (the working directory moves "
                    "with them); /scratch's admitted name is a symlink to there and the source is "
                    "bound at its admitted name as well (so `cp -a /src` copies the tree), so "
                    "commands naming them still run while getcwd() in the working directory or "
                    "below /scratch answers with the varied path; /out "
                    "keeps its name; under podman, whose image root takes no links, the admitted "
                    "names are the same mounts bound a second time (getcwd() there answers "
                    "with the admitted name)",
                    kVariedBuildRoot));
  if (v.num_cpus)
    add("num_cpus", v.cpus_used > 0
                        ? fmt::format("the job may use {} CPU(s) (CPU affinity)", v.cpus_used)
                        : std::string("not varied: the controller may use only one CPU"));
  if (v.user_id)
    add("user_id", fmt::format("the job's uid and gid are {} inside its user namespace (bwrap "
                               "--uid/--gid), and its generated /etc/passwd and /etc/group name "
                               "them; not varied under podman, whose job is its container's root",
                               kVariedUid));
  if (v.time)
    add("time", v.faketime_sha256.empty()
                    ? fmt::format("not varied: libfaketime is not installed at {} (apt-get "
                                  "install faketime)",
                                  kFaketimeHostPath)
                    : fmt::format("the job's clock reads {} days later: the host's libfaketime "
                                  "(sha256:{}) is pinned at {} and preloaded (LD_PRELOAD, "
                                  "FAKETIME={}); statically linked programs, and programs that "
                                  "read the clock without libc (Go), are not shifted, nor is a "
                                  "view without a libc and libm for it to load",
                                  kFaketimeOffset.substr(1, kFaketimeOffset.size() - 2),
                                  v.faketime_sha256, kFaketimeJobPath, kFaketimeOffset));
  if (v.fileordering)
    add("fileordering",
        "the job's read-only source is a copy on a tmpfs written so that every directory lists "
        "its entries (readdir, `ls -f`) in another order than the verified copy the control "
        "saw; not varied for a writable source (the run's own copy, which outputs come from)");
  if (v.kernel)
    add("kernel",
        "personality UNAME26 (setarch --uname-2.6) on the process that starts the mechanism, "
        "inherited by the job: `uname -r` reports a 2.6 release; `uname -v` and the kernel's "
        "behaviour are the host's and cannot be varied");
  if (v.aslr)
    add("aslr",
        "personality ADDR_NO_RANDOMIZE on the process that starts the mechanism, inherited by the "
        "job (no set-id program between): its address space is laid out without randomisation, "
        "where the control's is randomised (unless the host disables randomisation "
        "altogether: kernel.randomize_va_space=0)");
  if (v.exec_path)
    add("exec_path", fmt::format("PATH gains {} at its end, an empty directory (under podman "
                                 "it does not exist)",
                                 kVariedPathDir));
  if (v.domain_host)
    add("domain_host", fmt::format("the hostname is {} and the NIS domain name {} (a UTS "
                                   "namespace of the process that starts the mechanism, which the "
                                   "job's copies; set only when sealrun runs as root)",
                                   kVariedHostname, kVariedDomainname));
  if (v.home)
    add("home", fmt::format("HOME={}, an empty read-only directory (the control has the admitted "
                            "HOME, usually none); under podman it does not exist",
                            kVariedHome));
  return out;
}

}  // namespace sealrun::run
