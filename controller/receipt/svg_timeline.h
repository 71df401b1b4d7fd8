// SPDX-License-Identifier: Apache-2.0
// The timeline plot of `receipt report`: a sample series (the growth census's samples, memory in
// use and owned space over the run) drawn as one inline SVG, so the page needs no script, no font
// and no file beside it. Pure: numbers in, markup out. The output is bounded whatever the input:
// each series is thinned to kMaxPlotPoints (first, last and peak kept, as the census itself
// thins), and every label is ours.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sealrun::report {

inline constexpr size_t kMaxPlotPoints = 512;

struct PlotPoint {
  int64_t t_ms = 0;  // since the census started
  uint64_t value = 0;
};

struct PlotSeries {
  std::string label;  // ours: "memory in use"
  std::string color;  // ours: "#1f6feb"
  std::vector<PlotPoint> points;
};

// A horizontal line at a limit; a limit far above the data is named in the legend instead, so the
// data is not flattened against the axis.
struct PlotLimit {
  std::string label;  // ours: "memory_max_bytes"
  uint64_t value = 0;
};

struct Plot {
  std::string title;  // ours
  std::vector<PlotSeries> series;
  std::vector<PlotLimit> limits;
};

// At most `keep` points (at least 3): the first, the last and the highest, the rest evenly.
std::vector<PlotPoint> thin_points(const std::vector<PlotPoint>& points, size_t keep);

// "<svg ...>…</svg>": values on a byte axis (binary units), time in seconds.
std::string timeline_svg(const Plot& plot);

}  // namespace sealrun::report
