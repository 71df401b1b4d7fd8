// SPDX-License-Identifier: Apache-2.0
// The six files of the job's /etc that sealrun makes for each run instead of taking them from the
// host (docs/view.md, "The job's /etc"): who the job is, what its name resolves to, and that it
// has no resolver. Only their paths live here, so that every module that must treat them apart can
// name them — the view (containment/job_etc.h writes them), learning (never learned: learn/), and
// admission verification (an older admission's pins at these paths are left out of the view, so
// they are not checked either).
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace sealrun {

inline constexpr std::array<std::string_view, 6> kGeneratedEtcPaths = {
    "/etc/passwd",   "/etc/group",         "/etc/hosts",
    "/etc/hostname", "/etc/nsswitch.conf", "/etc/resolv.conf"};

// `path` is exactly one of kGeneratedEtcPaths (not below: they are files).
inline bool is_generated_etc_path(std::string_view path) {
  return std::find(kGeneratedEtcPaths.begin(), kGeneratedEtcPaths.end(), path) !=
         kGeneratedEtcPaths.end();
}

}  // namespace sealrun
