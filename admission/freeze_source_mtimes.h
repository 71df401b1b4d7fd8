// SPDX-License-Identifier: Apache-2.0
// Freezing the source's timestamps (docs/admission.md, "Source timestamps"): which mode
// (source.mtimes), and the one time that is both SOURCE_DATE_EPOCH and, in mode "fixed", the mtime
// of every entry of the job's source. freeze.cc calls this once the source's pins are computed.
//
// Where the time comes from, first match wins: a `--set source_date_epoch=N` or `--set
// source.mtime_epoch=N` (either sets both); the draft's source_date_epoch and/or
// source.mtime_epoch (refused when both are given and differ); otherwise the committer time of a
// git or bundle source's pinned commit, or kDefaultSourceEpoch for a plain tree. "preserved"
// (only for a plain tree) lists the host tree's mtimes into the admission instead.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/result.h"

namespace sealrun::admission {

// NOLINTNEXTLINE(bugprone-exception-escape): json members' implicit special functions.
struct SourceTimesChoice {
  // The source object as the draft and --set left it, before its pins replaced it.
  nlohmann::json given_source;
  // The value of the last --set of source_date_epoch or source.mtime_epoch, if any.
  std::optional<nlohmann::json> set_epoch;
  // --source-mtimes: "fixed" or "preserved"; empty: the draft's source.mtimes, else "fixed".
  std::string flag;
};

// True for the --set keys that name the one time (they are applied by settle_source_times()).
bool is_source_epoch_key(std::string_view key);

// Writes source.mtimes and source.mtime_epoch (or source.mtimes_list and mtimes_sha256) into
// (*doc)["source"], which holds freshly computed pins, and the top-level source_date_epoch.
Status settle_source_times(nlohmann::json* doc, const SourceTimesChoice& choice);

}  // namespace sealrun::admission
