// SPDX-License-Identifier: Apache-2.0
// The terminal line of hashing progress: see hash_progress.h.
#include "fingerprint/hash_progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace sealrun {
namespace {

// The rate is measured over this much recent time, so that it follows a change of pace (cold
// small files, then a warm large one) within a few seconds without jumping at every sample.
constexpr int64_t kRateWindowMs = 3000;

std::string eta_text(double seconds) {
  const auto s = static_cast<uint64_t>(std::llround(std::max(seconds, 0.0)));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, s % 3600 / 60);
}

}  // namespace

double ProgressLine::rate(const HashProgress& p, int64_t now_ms) {
  samples_.emplace_back(now_ms, p.bytes_done);
  while (samples_.size() > 2 && now_ms - samples_[1].first >= kRateWindowMs) samples_.pop_front();
  const auto& [t0, b0] = samples_.front();
  if (now_ms <= t0 || p.bytes_done < b0) return 0;
  return static_cast<double>(p.bytes_done - b0) * 1000.0 / static_cast<double>(now_ms - t0);
}

std::string ProgressLine::render(const HashProgress& p, int64_t now_ms) {
  const double bytes_per_s = rate(p, now_ms);
  const std::string speed =
      bytes_per_s > 0 ? fmt::format(", {}/s", binary_size_text(static_cast<uint64_t>(bytes_per_s)))
                      : std::string();
  const std::string cached =
      p.files_from_cache > 0 ? fmt::format(" ({} by stat)", p.files_from_cache) : std::string();
  // Through the digest cache most files are checked by a stat, not read: "verifying", not
  // "hashing", once any file was.
  const char* verb = p.files_from_cache > 0 ? "verifying" : "hashing";
  if (!p.walk_complete) {
    return fmt::format("{} {}: {} in {} files{}{} (finding files: {} so far)", verb, label_,
                       binary_size_text(p.bytes_done), p.files_done, cached, speed, p.files_found);
  }
  // Over bytes when there are any (time follows bytes), else over files (a tree of empty files).
  int percent = 100;
  if (p.bytes_found > 0)
    percent = static_cast<int>(std::min(p.bytes_done, p.bytes_found) * 100 / p.bytes_found);
  else if (p.files_found > 0)
    percent = static_cast<int>(std::min(p.files_done, p.files_found) * 100 / p.files_found);
  shown_percent_ = std::max(shown_percent_, percent);
  std::string eta;
  if (bytes_per_s > 0 && p.bytes_done < p.bytes_found)
    eta = ", ETA " + eta_text(static_cast<double>(p.bytes_found - p.bytes_done) / bytes_per_s);
  return fmt::format("{} {}: {} of {} ({}%), {} of {} files{}{}{}", verb, label_,
                     binary_size_text(p.bytes_done), binary_size_text(p.bytes_found),
                     shown_percent_, p.files_done, p.files_found, cached, speed, eta);
}

}  // namespace sealrun
