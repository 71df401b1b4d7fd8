// SPDX-License-Identifier: Apache-2.0
// --explain's search for the variations that cause a difference: see rebuild_causes.h.
#include "controller/rebuild/rebuild_causes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace sealrun::run {

namespace {

struct Search {
  const RebuildUnder& rebuild;
  CauseSearch out;

  Result<bool> differs(const std::vector<std::string>& names) {
    CauseProbe p = SEALRUN_TRY(rebuild(names));
    p.variations = names;
    out.probes.push_back(p);
    return p.differs;
  }

  // `set` is known to differ (as a whole).
  Status split(const std::vector<std::string>& set) {
    if (set.size() == 1) {
      out.causes.push_back(set[0]);
      return ok_status();
    }
    auto mid = set.begin() + static_cast<std::ptrdiff_t>((set.size() + 1) / 2);
    std::vector<std::string> left(set.begin(), mid), right(mid, set.end());
    bool l = SEALRUN_TRY(differs(left));
    bool r = SEALRUN_TRY(differs(right));
    if (!l && !r) {  // the difference needs variations of both halves at once
      out.together.insert(out.together.end(), set.begin(), set.end());
      return ok_status();
    }
    if (l) SEALRUN_TRY(split(left));
    if (r) SEALRUN_TRY(split(right));
    return ok_status();
  }
};

}  // namespace

Result<CauseSearch> find_causes(const std::vector<std::string>& varied,
                                const RebuildUnder& rebuild) {
  Search s{rebuild, {}};
  if (varied.empty()) s.out.differs_without_variation = true;  // that rebuild varied nothing
  if (varied.size() == 1) s.out.causes = varied;
  if (varied.size() > 1) {
    SEALRUN_TRY(s.split(varied));
    // Every variation differs alone: perhaps none is needed. One rebuild with none tells.
    if (s.out.causes.size() == varied.size() && SEALRUN_TRY(s.differs({}))) {
      s.out.causes.clear();
      s.out.differs_without_variation = true;
    }
  }
  std::sort(s.out.causes.begin(), s.out.causes.end());
  std::sort(s.out.together.begin(), s.out.together.end());
  return s.out;
}

std::string causes_text(const CauseSearch& search) {
  std::string out;
  for (const auto& p : search.probes)
    out += fmt::format(
        "  explain: rebuilt {} under {}: {}{}\n", p.id,
        p.variations.empty() ? "no variation" : fmt::format("{}", fmt::join(p.variations, ",")),
        p.differs ? "differs" : "identical", p.note.empty() ? "" : " (" + p.note + ")");
  if (search.differs_without_variation)
    out +=
        "differs under: no variation (a rebuild with none differs too: the build is not "
        "deterministic)\n";
  else if (!search.causes.empty())
    out += fmt::format("differs under: {}\n", fmt::join(search.causes, ", "));
  if (!search.together.empty())
    out += fmt::format("differs under: {} together (none of them alone)\n",
                       fmt::join(search.together, " + "));
  return out;
}

nlohmann::json causes_json(const CauseSearch& search) {
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : search.probes) {
    nlohmann::json e = {{"id", p.id}, {"variations", p.variations}, {"differs", p.differs}};
    if (!p.note.empty()) e["note"] = p.note;
    probes.push_back(std::move(e));
  }
  nlohmann::json out = {{"causes", search.causes}, {"cause_rebuilds", probes}};
  if (!search.together.empty()) out["together"] = search.together;
  if (search.differs_without_variation) out["differs_without_variation"] = true;
  return out;
}

}  // namespace sealrun::run
