// SPDX-License-Identifier: Apache-2.0
// check_source_times(): see verify_source_mtimes.h.
#include "admission/verify_source_mtimes.h"

#include <fmt/format.h>
#include <time.h>

#include "fingerprint/source_mtimes.h"

namespace sealrun::admission {

std::string fixed_times_text(int64_t epoch) {
  time_t t = static_cast<time_t>(epoch);
  struct tm tm = {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return fmt::format("fixed at {} ({})", epoch, buf);
}

std::optional<PinCheck> check_source_times(const SourcePin& source, int64_t epoch,
                                           const std::string& root, bool run_copy) {
  if (source.mtimes == SourceMtimes::kFixed) {
    if (!run_copy) return std::nullopt;
    std::string expected = fixed_times_text(epoch);
    PinCheck c{"source.mtimes", expected, expected, CheckStatus::kPass};
    if (Status st = stamp_tree_times(root, epoch); !st.ok()) {
      c.observed = "error: " + st.error().message();
      c.status = CheckStatus::kFail;
    }
    return c;
  }
  PinCheck c{"source.mtimes_sha256", source.mtimes_sha256, {}, CheckStatus::kFail};
  auto listed = list_mtimes(root);
  if (!listed.ok()) {
    c.observed = "error: " + listed.error().message();
    return c;
  }
  std::string digest = mtimes_digest(*listed);
  if (digest != source.mtimes_sha256) {
    auto first = first_mtime_difference(source.mtimes_list, *listed);
    c.observed = fmt::format("{} (first difference: {})", digest,
                             first ? *first : "none in source.mtimes_list, which does not match");
    return c;
  }
  c.observed = digest;
  c.status = CheckStatus::kPass;
  // Verifying read the copy's files: its atimes go back to the pinned mtimes before the job runs.
  if (run_copy) {
    if (Status st = stamp_tree_times(root, std::nullopt); !st.ok()) {
      c.observed = "error: " + st.error().message();
      c.status = CheckStatus::kFail;
    }
  }
  return c;
}

}  // namespace sealrun::admission
