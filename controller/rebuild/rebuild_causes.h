// SPDX-License-Identifier: Apache-2.0
// `sealrun rebuild --explain` with several variations: which of them, alone, make the outputs
// differ (the receipt-free `causes` of the report, docs/rebuild.md "Which variation"). The search
// is a bisection over the varied names (adaptive group testing): a set known to differ is split in
// two halves and each half is rebuilt; a half that differs is split again, one that is identical
// is dropped, and a single variation that differs on its own is a cause. With k causes among n
// variations that costs about 2·k·log2(n) rebuilds (8 for one cause among 14) instead of n for
// one rebuild per variation; it assumes a variation that makes a difference alone still makes one
// together with others (no variation undoes another's effect). When every single variation
// differs, one rebuild with none tells a build that differs anyway (not deterministic) from one
// that every variation breaks. Pure: the rebuilds are the caller's (a function given in).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.h"

namespace sealrun::run {

// One rebuild the search asked for: under `variations` (possibly none), did the outputs differ
// from the original's? (A rebuild that did not build counts as differing; `note` says why.)
struct CauseProbe {
  std::vector<std::string> variations;
  bool differs = false;
  std::string id;    // the rebuild's run id (the caller's)
  std::string note;  // e.g. "did not build (exit 5)"
};

struct CauseSearch {
  std::vector<std::string> causes;    // sorted: each alone makes the outputs differ
  std::vector<std::string> together;  // differ only together (none alone), sorted; else empty
  bool differs_without_variation = false;
  std::vector<CauseProbe> probes;  // in the order they ran
};

using RebuildUnder = std::function<Result<CauseProbe>(const std::vector<std::string>& variations)>;

// `varied`: the variations of a rebuild whose outputs differed (in the order applied). With one,
// it is the cause and nothing is rebuilt; with none, there is no cause to find.
Result<CauseSearch> find_causes(const std::vector<std::string>& varied,
                                const RebuildUnder& rebuild);

// "differs under: build_path, timezone" and one line per rebuild of the search.
std::string causes_text(const CauseSearch& search);
// {causes, together?, differs_without_variation?, cause_rebuilds: [{id, variations, differs,
// note?}]} for `rebuild --json` (merged into its document).
nlohmann::json causes_json(const CauseSearch& search);

}  // namespace sealrun::run
