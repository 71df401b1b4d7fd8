// SPDX-License-Identifier: Apache-2.0
// What `sealrun rebuild --vary LIST` changes about the job's world, with reprotest's names
// (docs/rebuild.md): parsing the list, applying it to the plan's ContainmentSpec as plain data, and
// saying for the receipt how each was applied. Pure: what needs the host is done by others and
// handed in here as data — the rebuild command narrows its own CPU affinity (num_cpus) and hashes
// libfaketime (time: faketime_sha256), and the pipeline writes the reordered copy of the source
// (fileordering, run_fileordering.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "containment/spec.h"
#include "core/result.h"

namespace sealrun::run {

struct Variations {
  bool hostname = false, umask = false, locale = false, timezone = false, build_path = false,
       num_cpus = false, user_id = false, time = false, fileordering = false, kernel = false,
       aslr = false, exec_path = false, domain_host = false, home = false;
  // The umask the job would inherit otherwise (the controller's; the caller reads it).
  uint32_t base_umask = 0022;
  unsigned cpus_used = 0;  // num_cpus: how many CPUs the controller kept (0: could not vary)
  // time: the SHA-256 of the host's libfaketime (kFaketimeHostPath) when the caller found and
  // hashed it; empty: it is not installed, and the clock is not varied.
  std::string faketime_sha256;
  bool any() const;
};

// The names --vary accepts, in the order docs/rebuild.md explains them ("all" is every one). The
// option's help text lists them from here.
inline constexpr std::string_view kVariationNames[] = {
    "hostname", "umask",        "locale", "timezone", "build_path", "num_cpus",    "user_id",
    "time",     "fileordering", "kernel", "aslr",     "exec_path",  "domain_host", "home"};

// "hostname,umask" / "all" / "" → Variations; an unknown name is refused, naming it and the known
// ones.
Result<Variations> parse_variations(std::string_view list);

// The values a varied run uses (so tests and docs name them once).
inline constexpr std::string_view kVariedHostname = "sealrun-rebuild";
inline constexpr std::string_view kVariedDomainname = "sealrun-rebuild.invalid";
inline constexpr uint32_t kVariedUmask = 0002;  // reprotest's; the usual is 0022
inline constexpr std::string_view kVariedLocale = "fr_CH.UTF-8";
inline constexpr std::string_view kVariedTimezone = "GMT-14";  // 14 hours east of UTC
inline constexpr std::string_view kVariedBuildRoot = "/build/sealrun-rebuild";
inline constexpr uint32_t kVariedUid = 4242;
// time: reprotest's shift (faketime +373days), in libfaketime's syntax.
inline constexpr std::string_view kFaketimeOffset = "+373d";
inline constexpr std::string_view kFaketimeHostPath =
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
// Where the job sees it: a directory of its own, so no pinned tree (a read-only /usr) is in the
// way.
inline constexpr std::string_view kFaketimeJobPath = "/.sealrun-faketime/libfaketime.so.1";
// exec_path: the directory appended to PATH (empty: it exists in a bwrap view only).
inline constexpr std::string_view kVariedPathDir = "/.sealrun-rebuild-path";
// home: HOME, an empty directory (bwrap's view; under podman it does not exist).
inline constexpr std::string_view kVariedHome = "/.sealrun-rebuild-home";
// personality(2) flags (linux/personality.h), named here so that this header stays pure.
inline constexpr unsigned long kPersonalityUname26 = 0x0020000;
inline constexpr unsigned long kPersonalityAddrNoRandomize = 0x0040000;

// The umask a varied run uses: reprotest's 0002, or 0022 when the controller's is 0002 already.
uint32_t varied_umask(uint32_t controller_umask);

// `path` moved below kVariedBuildRoot when it is `from` or lies below it, else unchanged.
std::string moved_below_build_root(const std::string& path, const std::string& from);

// Changes `spec` (hostname, domain name, umask, personality, environment, the mounts of the source
// at `source_target` and of the scratch space with links at their admitted names, the working
// directory, the job's uid, libfaketime, the empty directories of exec_path and home) as `v` asks.
void apply_variations(const Variations& v, const std::string& source_target, ContainmentSpec& spec);

// One record per variation asked for, {name, how}, in kVariationNames order, for the rebuild's
// receipt and its report; how says what was changed and where it cannot apply (e.g. under podman).
nlohmann::json describe_variations(const Variations& v);

}  // namespace sealrun::run
