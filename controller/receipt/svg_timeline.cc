// SPDX-License-Identifier: Apache-2.0
// The SVG timeline: see svg_timeline.h. Coordinates are written with one decimal; a series is one
// <polyline> (a single sample one <circle>), so the markup grows with the points kept, nothing
// else.
#include "controller/receipt/svg_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "controller/receipt/html_text.h"
#include "fingerprint/hash_progress.h"

namespace sealrun::report {

namespace {

constexpr double kWidth = 760, kHeight = 260;
constexpr double kLeft = 86, kRight = 16, kTop = 44, kBottom = 46;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
// A limit is drawn when it is at most this many times the highest value, else named only.
constexpr double kLimitDrawnWithin = 1.6;

// A step of 1, 2, 2.5 or 5 times a power of ten that splits `span` into about `parts`.
double nice_step(double span, int parts) {
  double raw = span / parts;
  if (raw <= 0) return 1;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double f = raw / mag;
  double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return nice * mag;
}

// A byte step in a binary unit: 1, 2, 2.5, 5 × 10^k of KiB, MiB, ...
double byte_step(double span) {
  double unit = 1;
  while (unit * 1024 <= span / 4 && unit < std::pow(1024.0, 5)) unit *= 1024;
  return nice_step(span / unit, 4) * unit;
}

std::string seconds_text(double ms) {
  double s = ms / 1000;
  return s == std::floor(s) ? fmt::format("{:.0f} s", s) : fmt::format("{:g} s", s);
}

}  // namespace

std::vector<PlotPoint> thin_points(const std::vector<PlotPoint>& points, size_t keep) {
  keep = std::max<size_t>(keep, 3);
  if (points.size() <= keep) return points;
  size_t n = points.size();
  std::vector<bool> kept(n, false);
  kept[0] = kept[n - 1] = true;
  size_t peak = 0;
  for (size_t i = 1; i < n; ++i)
    if (points[i].value > points[peak].value) peak = i;
  kept[peak] = true;
  size_t extra = keep - static_cast<size_t>(std::count(kept.begin(), kept.end(), true));
  for (size_t k = 1; k <= extra; ++k) kept[(n - 1) * k / (extra + 1)] = true;
  std::vector<PlotPoint> out;
  for (size_t i = 0; i < n; ++i)
    if (kept[i]) out.push_back(points[i]);
  return out;
}

std::string timeline_svg(const Plot& plot) {
  std::vector<PlotSeries> series;
  int64_t t_max = 0;
  uint64_t v_max = 0;
  for (const auto& s : plot.series) {
    PlotSeries thin{s.label, s.color, thin_points(s.points, kMaxPlotPoints)};
    for (const auto& p : thin.points) {
      t_max = std::max(t_max, p.t_ms);
      v_max = std::max(v_max, p.value);
    }
    series.push_back(std::move(thin));
  }
  std::vector<PlotLimit> drawn, named;
  double top = static_cast<double>(v_max);
  for (const auto& l : plot.limits) {
    if (v_max == 0 ||
        static_cast<double>(l.value) > kLimitDrawnWithin * static_cast<double>(v_max)) {
      named.push_back(l);
    } else {
      drawn.push_back(l);
      top = std::max(top, static_cast<double>(l.value));
    }
  }
  top = top <= 0 ? 1024 : top * 1.08;
  double y_step = byte_step(top);
  top = std::ceil(top / y_step) * y_step;
  double t_span = t_max <= 0 ? 1000 : static_cast<double>(t_max);
  double x_step = nice_step(t_span, 6);
  auto x = [&](double t) { return kLeft + kPlotW * t / t_span; };
  auto y = [&](double v) { return kTop + kPlotH * (1 - v / top); };

  std::string out = fmt::format(
      "<svg class=\"plot\" viewBox=\"0 0 {:.0f} {:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "role=\"img\" aria-label=\"{}\"><title>{}</title>\n",
      kWidth, kHeight, kWidth, kHeight, html::entities(plot.title), html::entities(plot.title));
  out += fmt::format("<text x=\"{:.0f}\" y=\"16\" class=\"plot-title\">{}</text>\n", kLeft,
                     html::entities(plot.title));
  // Axes and grid.
  // Integer counters: a double accumulated step by step drifts, and may add or lose the last tick.
  for (int i = 0; i * y_step <= top + y_step / 2; ++i) {
    const double v = i * y_step;
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" class=\"grid\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"end\">{}</text>\n",
        kLeft, y(v), kLeft + kPlotW, y(v), kLeft - 6, y(v) + 4,
        html::entities(binary_size_text(static_cast<uint64_t>(v))));
  }
  for (int i = 0; i * x_step <= t_span + x_step / 2; ++i) {
    const double t = i * x_step;
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" class=\"grid\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"middle\">{}</text>\n",
        x(t), kTop, x(t), kTop + kPlotH, x(t), kTop + kPlotH + 16, seconds_text(t));
  }
  out += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
      "class=\"frame\"/>\n",
      kLeft, kTop, kPlotW, kPlotH);
  for (const auto& l : drawn)
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" class=\"limit\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"end\">{} {}</text>\n",
        kLeft, y(static_cast<double>(l.value)), kLeft + kPlotW, y(static_cast<double>(l.value)),
        kLeft + kPlotW - 4, y(static_cast<double>(l.value)) - 4, html::entities(l.label),
        html::entities(binary_size_text(l.value)));
  // The series, then the legend above the plot.
  double legend_x = kLeft;
  for (const auto& s : series) {
    std::string color = html::entities(s.color);
    if (s.points.size() == 1) {
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n",
                         x(static_cast<double>(s.points[0].t_ms)),
                         y(static_cast<double>(s.points[0].value)), color);
    } else if (!s.points.empty()) {
      out +=
          fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"", color);
      for (const auto& p : s.points)
        out += fmt::format("{:.1f},{:.1f} ", x(static_cast<double>(p.t_ms)),
                           y(static_cast<double>(p.value)));
      out += "\"/>\n";
    }
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"24\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"34\" class=\"legend\">{}</text>\n",
        legend_x, color, legend_x + 16, html::entities(s.label));
    legend_x += 24 + 7.0 * static_cast<double>(s.label.size());
  }
  if (!named.empty()) {
    std::string text;
    for (const auto& l : named)
      text += (text.empty() ? "" : ", ") + l.label + " " + binary_size_text(l.value);
    out += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.0f}\" class=\"legend\">far above the plot: {}</text>\n", kLeft,
        kHeight - 4, html::entities(text));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace sealrun::report
