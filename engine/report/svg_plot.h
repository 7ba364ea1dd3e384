// engine/report/svg_plot.h — line plots as standalone inline SVG: no script, no external assets.
//
//   pt2diff::PlotOptions o;
//   o.title = "error per node"; o.x_label = "node"; o.y_label = "max ulp"; o.log_y = true; o.id = "profile";
//   o.h_lines.push_back({"0.5 ulp", 0.5});
//   std::string svg = pt2diff::svg_line_plot({{"eager local", "#1f77b4", {{0, 0.5}, {1, 3}}}}, o);
//
// The element has width, height and a viewBox, so CSS `max-width: 100%; height: auto` scales it.
// Every text that goes into the SVG is escaped here; colours are used as given (escaped too).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graphs/wording/wording.h"

namespace pt2diff {

struct PlotSeries {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  ///< (x, y); a skipped point breaks the line
  bool dashed = false;
  bool markers = false;  ///< a dot on every point (a point with no drawn neighbour always gets one)
  /// Optional, parallel to `points`: a hover text (SVG <title>) per point.
  std::vector<std::string> point_titles = {};
};

/// A horizontal (y = at) or vertical (x = at) reference line.
struct PlotLine {
  std::string label;
  double at = 0;
  std::string color = "#888";
};

struct PlotOptions {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  int width = 900, height = 360;
  /// Explicit tick labels at these x; empty: automatic. Labels that do not fit are thinned (every
  /// k-th is shown), long ones are rotated and shortened (the full text is the tick's hover text).
  std::vector<std::pair<double, std::string>> x_ticks;
  std::vector<PlotLine> h_lines, v_lines;
  std::vector<std::pair<double, double>> x_bands;  ///< highlighted x ranges [from, to]
  std::string id;                                  ///< the <svg id="..."> attribute
  /// Optional, parallel to `x_bands`: a label written at the top of each band.
  std::vector<std::string> x_band_labels = {};
};

/// A standalone <svg> element (no XML prolog) with axes, ticks (log decades when log), legend,
/// lines; points with non-finite or (on log axes) non-positive values are skipped.
std::string svg_line_plot(const std::vector<PlotSeries>& series, const PlotOptions& options);

using wording::html_escape;  // graphs/wording/wording.h

}  // namespace pt2diff
