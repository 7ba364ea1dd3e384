// engine/report/svg_plot.cpp — line plots as inline SVG (see svg_plot.h).
//
// Layout: title and legend on top, y tick labels and the y label on the left, x tick labels (rotated
// and thinned when they do not fit) and the x label below. Text widths are estimated (about 0.56 em
// per character of an 11 px sans-serif font): nothing here measures glyphs.
#include "engine/report/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace pt2diff {

namespace {

constexpr double kCharWidth = 6.2;  // px per character at font-size 11 (estimate)
constexpr double kFontSize = 11;
constexpr size_t kMaxTickChars = 20;

double text_width(const std::string& s, double font_size = kFontSize) {
  // UTF-8 continuation bytes do not start a character.
  size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
  return static_cast<double>(chars) * kCharWidth * font_size / kFontSize;
}

std::string shorten(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  size_t cut = max_chars - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return s.substr(0, cut) + "\u2026";
}

bool usable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

double nice_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double e = std::floor(std::log10(raw));
  const double base = std::pow(10.0, e);
  const double f = raw / base;
  const double n = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return n * base;
}

struct Tick {
  double at;
  std::string label;     // plain text, or empty
  int exponent = 0;      // log decades written as 10^exponent when `power` is set
  bool power = false;
  bool major = true;
  std::string title;     // hover text (full label when shortened)
};

/// One axis: its data range and the pixel range it maps to.
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;   // data units
  double p0 = 0, p1 = 1;   // pixels (p1 < p0 for the y axis)
  double map(double v) const {
    const double u = log ? std::log10(v) : v, l = log ? std::log10(lo) : lo, h = log ? std::log10(hi) : hi;
    return p0 + (u - l) / (h - l) * (p1 - p0);
  }
  bool inside(double v) const { return usable(v, log) && v >= lo && v <= hi; }
};

/// The range the data (and reference lines) need; `tight` pads by 2% (at least `min_pad`) instead of
/// rounding to nice steps.
void fit(Axis& a, std::vector<double> values, bool tight, double min_pad = 0) {
  std::erase_if(values, [&](double v) { return !usable(v, a.log); });
  if (values.empty()) {
    a.lo = a.log ? 1 : 0;
    a.hi = a.log ? 10 : 1;
    return;
  }
  double lo = *std::min_element(values.begin(), values.end()), hi = *std::max_element(values.begin(), values.end());
  if (a.log) {
    double l = std::floor(std::log10(lo)), h = std::ceil(std::log10(hi));
    if (h <= l) --l, ++h;
    a.lo = std::pow(10.0, l);
    a.hi = std::pow(10.0, h);
    return;
  }
  if (hi <= lo) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.5;
    lo -= pad;
    hi += pad;
  }
  if (tight) {
    const double pad = std::max((hi - lo) * 0.02, min_pad);
    a.lo = lo - pad;
    a.hi = hi + pad;
    return;
  }
  const double step = nice_step((hi - lo) / 5);
  a.lo = std::floor(lo / step) * step;
  a.hi = std::ceil(hi / step) * step;
}

std::string linear_label(double v, double step) {
  if (std::abs(v) < step * 1e-9) v = 0;  // no "-0" or 1e-17
  const double mag = std::max(std::abs(v), step);
  if (mag >= 1e6 || step < 1e-4) return fmt::format("{:.2g}", v);
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fmt::format("{:.{}f}", v, decimals);
}

std::vector<Tick> auto_ticks(const Axis& a) {
  std::vector<Tick> ticks;
  if (a.log) {
    const int l = static_cast<int>(std::lround(std::log10(a.lo))), h = static_cast<int>(std::lround(std::log10(a.hi)));
    const int decades = h - l;
    const int every = std::max(1, (decades + 9) / 10);
    // Powers of ten for every label as soon as one decade would not read well as a plain number.
    const bool powers = l < -3 || h > 4;
    for (int e = l; e <= h; ++e) {
      if ((e - l) % every != 0) {
        ticks.push_back({std::pow(10.0, e), "", e, false, false, ""});
        continue;
      }
      Tick t{std::pow(10.0, e), "", e, false, true, ""};
      if (!powers) t.label = fmt::format("{:g}", std::pow(10.0, e));
      else t.power = true;
      ticks.push_back(t);
      if (decades <= 6 && e < h)
        for (int m = 2; m <= 9; ++m) ticks.push_back({m * std::pow(10.0, e), "", 0, false, false, ""});
    }
    return ticks;
  }
  const double step = nice_step((a.hi - a.lo) / 6);
  for (double v = std::ceil(a.lo / step - 1e-9) * step; v <= a.hi + step * 1e-9; v += step)
    ticks.push_back({v, linear_label(v, step), 0, false, true, ""});
  return ticks;
}

/// A white outline under a label so that it reads over lines and grid.
#define HALO " paint-order=\"stroke\" stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\""

std::string f1(double v) { return fmt::format("{:.1f}", v); }

/// <text> content of a tick label: plain, or 10 with a superscript exponent.
std::string tick_text(const Tick& t) {
  if (!t.power) return html_escape(t.label);
  return fmt::format("10<tspan dy=\"-5\" font-size=\"8\">{}</tspan>", t.exponent);
}
std::string tick_plain(const Tick& t) { return t.power ? fmt::format("10{}", t.exponent) : t.label; }

constexpr double kLegendLeft = 12;

/// One line of the SVG.
void add(std::string& svg, const std::string& s) {
  svg += s;
  svg += '\n';
}

/// Everything the drawing needs placed: the canvas, both axes with their pixel ranges, their ticks, the legend's rows.
struct Frame {
  double W = 0, H = 0;
  Axis x, y;
  std::vector<Tick> xt, yt;
  std::vector<std::vector<size_t>> legend_rows;  // series indexes, one row per line of the legend
  bool rotated = false;                          // x tick labels at 45 degrees
  bool has_data = false;                         // a point usable on both axes
  double plot_h() const { return y.p0 - y.p1; }
};

/// The values each axis must show: points usable on both axes, reference lines, bands and explicit ticks.
void data_ranges(const std::vector<PlotSeries>& series, const PlotOptions& o, Frame& f, std::vector<double>& xs, std::vector<double>& ys) {
  for (const PlotSeries& s : series)
    for (const auto& [px, py] : s.points)
      if (usable(px, f.x.log) && usable(py, f.y.log)) xs.push_back(px), ys.push_back(py);
  f.has_data = !xs.empty();
  for (const PlotLine& l : o.h_lines) ys.push_back(l.at);
  for (const PlotLine& l : o.v_lines) xs.push_back(l.at);
  for (const auto& [from, to] : o.x_bands) xs.push_back(from), xs.push_back(to);
  for (const auto& [at, label] : o.x_ticks) xs.push_back(at);
}

/// Explicit ticks (categories such as node indexes) get half a tick gap of room at both ends: that half gap.
double half_tick_gap(const PlotOptions& o, bool log_x) {
  std::vector<double> at;
  for (const auto& [v, label] : o.x_ticks)
    if (usable(v, log_x)) at.push_back(v);
  std::sort(at.begin(), at.end());
  double gap = std::numeric_limits<double>::infinity();
  for (size_t i = 1; i < at.size(); ++i)
    if (at[i] > at[i - 1]) gap = std::min(gap, at[i] - at[i - 1]);
  return std::isfinite(gap) ? gap / 2 : 0;
}

/// The x ticks: automatic, or the explicit ones inside the range (shortened, the full label as hover text) in order.
std::vector<Tick> x_axis_ticks(const PlotOptions& o, const Axis& x) {
  if (o.x_ticks.empty()) return auto_ticks(x);
  std::vector<Tick> xt;
  for (const auto& [at, label] : o.x_ticks)
    if (x.inside(at)) xt.push_back({at, shorten(label, kMaxTickChars), 0, false, true, label});
  std::sort(xt.begin(), xt.end(), [](const Tick& a, const Tick& b) { return a.at < b.at; });
  return xt;
}

/// Legend rows (series only: reference lines carry their label on the line), wrapped at the canvas width.
std::vector<std::vector<size_t>> legend_rows(const std::vector<PlotSeries>& series, double W) {
  std::vector<std::vector<size_t>> rows;
  double cursor = kLegendLeft;
  for (size_t i = 0; i < series.size(); ++i) {
    const double w = 30 + text_width(series[i].name) + 18;
    if (rows.empty() || cursor + w > W - 12) rows.emplace_back(), cursor = kLegendLeft;
    rows.back().push_back(i);
    cursor += w;
  }
  return rows;
}

/// The widest label among the major ticks.
double widest_label(const std::vector<Tick>& ticks) {
  double w = 0;
  for (const Tick& t : ticks)
    if (t.major) w = std::max(w, text_width(tick_plain(t)));
  return w;
}

/// Explicit x labels: every k-th, horizontal when they fit between ticks, else rotated by 45 degrees.
void thin_x_labels(Frame& f, const PlotOptions& o, double left, double right, double x_label_w) {
  if (o.x_ticks.empty() || f.xt.size() <= 1) return;
  f.x.p0 = left;
  f.x.p1 = f.W - right;
  double gap_px = std::numeric_limits<double>::infinity();
  for (size_t i = 1; i < f.xt.size(); ++i) gap_px = std::min(gap_px, f.x.map(f.xt[i].at) - f.x.map(f.xt[i - 1].at));
  gap_px = std::max(gap_px, 1e-3);
  size_t every = 1;
  if (gap_px < x_label_w + 8) {
    f.rotated = true;
    every = static_cast<size_t>(std::ceil(14 / gap_px));
  }
  for (size_t i = 0; i < f.xt.size(); ++i) f.xt[i].major = i % every == 0;
}

/// Margins for the title, legend, tick labels and axis labels; then both axes' pixel ranges.
void place_axes(Frame& f, const PlotOptions& o) {
  const double top = 10 + (o.title.empty() ? 0 : 22) + 18.0 * static_cast<double>(f.legend_rows.size()) + 8;
  double left = 10 + (o.y_label.empty() ? 0 : 20) + widest_label(f.yt) + 8;
  const double right = 18;
  const double x_label_w = widest_label(f.xt);
  thin_x_labels(f, o, left, right, x_label_w);
  const double x_tick_extent = f.rotated ? x_label_w * 0.71 + 12 : 18;
  if (f.rotated && !f.xt.empty()) left = std::max(left, x_label_w * 0.71 - 10);
  const double bottom = 8 + x_tick_extent + (o.x_label.empty() ? 0 : 20);
  f.x.p0 = left;
  f.x.p1 = f.W - right;
  f.y.p0 = f.H - bottom;
  f.y.p1 = top;
}

/// The frame of a plot: ranges fitted to the data, ticks, legend rows and margins.
Frame plot_frame(const std::vector<PlotSeries>& series, const PlotOptions& o) {
  Frame f;
  f.W = std::max(o.width, 200);
  f.H = std::max(o.height, 150);
  f.x = Axis{o.log_x};
  f.y = Axis{o.log_y};
  std::vector<double> xs, ys;
  data_ranges(series, o, f, xs, ys);
  fit(f.x, xs, /*tight=*/!o.x_ticks.empty(), half_tick_gap(o, f.x.log));
  fit(f.y, ys, /*tight=*/false);
  f.yt = auto_ticks(f.y);
  f.xt = x_axis_ticks(o, f.x);
  f.legend_rows = legend_rows(series, f.W);
  place_axes(f, o);
  return f;
}

/// The <svg> element's opening, its title (as <title> and as text) and the white background.
void draw_header(std::string& svg, const Frame& f, const PlotOptions& o) {
  add(svg, fmt::format(
               "<svg xmlns=\"http://www.w3.org/2000/svg\"{} width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
               "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif\" font-size=\"{}\">",
               o.id.empty() ? "" : fmt::format(" id=\"{}\"", html_escape(o.id)), f.W, f.H, f.W, f.H, kFontSize));
  if (!o.title.empty()) add(svg, fmt::format("<title>{}</title>", html_escape(o.title)));
  add(svg, fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>", f.W, f.H));
  if (!o.title.empty())
    add(svg, fmt::format("<text x=\"{}\" y=\"24\" font-size=\"13\" font-weight=\"600\" fill=\"#222\">{}</text>", kLegendLeft,
                         html_escape(o.title)));
}

/// The legend: a line sample (and a dot for series with markers) and the name of every series.
void draw_legend(std::string& svg, const Frame& f, const std::vector<PlotSeries>& series, const PlotOptions& o) {
  double ly = 10 + (o.title.empty() ? 0 : 22) + 10;
  for (const auto& row : f.legend_rows) {
    double cursor = kLegendLeft;
    for (size_t i : row) {
      const PlotSeries& s = series[i];
      const std::string color = html_escape(s.color);
      add(svg, fmt::format("<g class=\"legend\"><line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"{}/>", f1(cursor),
                           f1(ly), f1(cursor + 24), f1(ly), color, s.dashed ? " stroke-dasharray=\"6 3\"" : ""));
      if (s.markers) add(svg, fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>", f1(cursor + 12), f1(ly), color));
      add(svg, fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#333\">{}</text></g>", f1(cursor + 30), f1(ly + 4), html_escape(s.name)));
      cursor += 30 + text_width(s.name) + 18;
    }
    ly += 18;
  }
}

/// The highlighted x ranges, clamped to the axis, with their labels at the top.
void draw_bands(std::string& svg, const Frame& f, const PlotOptions& o) {
  for (size_t i = 0; i < o.x_bands.size(); ++i) {
    double from = std::min(o.x_bands[i].first, o.x_bands[i].second), to = std::max(o.x_bands[i].first, o.x_bands[i].second);
    if (!usable(from, f.x.log) || !usable(to, f.x.log)) continue;
    from = std::clamp(from, f.x.lo, f.x.hi);
    to = std::clamp(to, f.x.lo, f.x.hi);
    const double a = f.x.map(from), b = f.x.map(to);
    add(svg, fmt::format("<rect class=\"band\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#ffcc80\" fill-opacity=\"0.45\"/>", f1(a),
                         f1(f.y.p1), f1(std::max(1.5, b - a)), f1(f.plot_h())));
    if (i < o.x_band_labels.size() && !o.x_band_labels[i].empty())
      add(svg, fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\" fill=\"#8a4b00\"" HALO ">{}</text>", f1((a + b) / 2),
                           f1(f.y.p1 + 11), html_escape(o.x_band_labels[i])));
  }
}

/// Horizontal grid lines, with the labels of the major y ticks.
void draw_y_grid(std::string& svg, const Frame& f) {
  for (const Tick& t : f.yt) {
    if (!f.y.inside(t.at)) continue;
    const double py = f.y.map(t.at);
    add(svg, fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1\"/>", f1(f.x.p0), f1(py), f1(f.x.p1),
                         f1(py), t.major ? "#e3e3e3" : "#f3f3f3"));
    if (t.major)
      add(svg, fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#555\">{}</text>", f1(f.x.p0 - 6), f1(py + 4), tick_text(t)));
  }
}

/// Vertical grid lines at the major x ticks, tick marks, and the labels (rotated or not, hover text when shortened).
void draw_x_ticks(std::string& svg, const Frame& f, const PlotOptions& o) {
  const Axis& x = f.x;
  const Axis& y = f.y;
  const bool mark_every_tick = !o.x_ticks.empty() && static_cast<double>(f.xt.size()) <= (x.p1 - x.p0) / 3;
  for (const Tick& t : f.xt) {
    if (!x.inside(t.at)) continue;
    const double px = x.map(t.at);
    if (t.major)
      add(svg, fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#eeeeee\" stroke-width=\"1\"/>", f1(px), f1(y.p1), f1(px),
                           f1(y.p0)));
    if (t.major || mark_every_tick || o.x_ticks.empty())
      add(svg, fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#777\" stroke-width=\"1\"/>", f1(px), f1(y.p0), f1(px),
                           f1(y.p0 + (t.major ? 5 : 3))));
    if (!t.major) continue;
    const std::string hover = t.title.empty() || t.title == t.label ? "" : fmt::format("<title>{}</title>", html_escape(t.title));
    if (f.rotated)
      add(svg, fmt::format("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\" transform=\"rotate(-45 {0} {1})\" fill=\"#555\">{2}{3}</text>",
                           f1(px + 3), f1(y.p0 + 10), hover, tick_text(t)));
    else
      add(svg, fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">{}{}</text>", f1(px), f1(y.p0 + 17), hover,
                           tick_text(t)));
  }
}

/// Dashed reference lines across the plot, each with its label: horizontal ones, then vertical ones.
void draw_reference_lines(std::string& svg, const Frame& f, const PlotOptions& o) {
  for (const PlotLine& l : o.h_lines) {
    if (!f.y.inside(l.at)) continue;
    const double py = f.y.map(l.at);
    const std::string color = html_escape(l.color);
    add(svg, fmt::format("<line class=\"h-line\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1.2\" stroke-dasharray=\"5 4\"/>",
                         f1(f.x.p0), f1(py), f1(f.x.p1), f1(py), color));
    if (!l.label.empty())
      add(svg, fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"10\" fill=\"{}\"" HALO ">{}</text>", f1(f.x.p1 - 4), f1(py - 4),
                           color, html_escape(l.label)));
  }
  for (const PlotLine& l : o.v_lines) {
    if (!f.x.inside(l.at)) continue;
    const double px = f.x.map(l.at);
    const std::string color = html_escape(l.color);
    add(svg, fmt::format("<line class=\"v-line\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1.2\" stroke-dasharray=\"5 4\"/>",
                         f1(px), f1(f.y.p1), f1(px), f1(f.y.p0), color));
    if (!l.label.empty())
      add(svg, fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"{}\"" HALO ">{}</text>", f1(px + 4), f1(f.y.p1 + 11), color,
                           html_escape(l.label)));
  }
}

/// A series' line: polylines broken where a point is skipped. Returns the dots to draw: every point with markers,
/// else each point with no drawn neighbour.
std::vector<std::pair<double, double>> draw_polylines(std::string& svg, const Frame& f, const PlotSeries& s, const std::string& color) {
  std::vector<std::pair<double, double>> run;
  std::vector<std::pair<double, double>> dots;
  auto flush = [&] {
    if (run.size() == 1) dots.push_back(run[0]);
    if (run.size() >= 2) {
      std::string pts;
      for (const auto& [px, py] : run) pts += fmt::format("{}{},{}", pts.empty() ? "" : " ", f1(px), f1(py));
      add(svg, fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" stroke-linejoin=\"round\"{}/>", pts, color,
                           s.dashed ? " stroke-dasharray=\"6 3\"" : ""));
    }
    run.clear();
  };
  for (const auto& [px, py] : s.points) {
    if (usable(px, f.x.log) && usable(py, f.y.log)) run.emplace_back(f.x.map(px), f.y.map(py));
    else flush();
  }
  flush();
  if (s.markers) {
    dots.clear();
    for (const auto& [px, py] : s.points)
      if (usable(px, f.x.log) && usable(py, f.y.log)) dots.emplace_back(f.x.map(px), f.y.map(py));
  }
  return dots;
}

/// One series as a <g>: its line, its dots, and a hover target per titled point (transparent but painted, so
/// they take the pointer).
void draw_series(std::string& svg, const Frame& f, const PlotSeries& s) {
  const std::string color = html_escape(s.color);
  add(svg, fmt::format("<g class=\"series\" data-name=\"{}\">", html_escape(s.name)));
  for (const auto& [px, py] : draw_polylines(svg, f, s, color))
    add(svg, fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.6\" fill=\"{}\"/>", f1(px), f1(py), color));
  for (size_t i = 0; i < s.points.size() && i < s.point_titles.size(); ++i) {
    const auto& [px, py] = s.points[i];
    if (!usable(px, f.x.log) || !usable(py, f.y.log) || s.point_titles[i].empty()) continue;
    add(svg, fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"#000\" fill-opacity=\"0\"><title>{}</title></circle>", f1(f.x.map(px)),
                         f1(f.y.map(py)), html_escape(s.point_titles[i])));
  }
  add(svg, "</g>");
}

/// The axis labels: x centred under the plot, y rotated along the left edge.
void draw_axis_labels(std::string& svg, const Frame& f, const PlotOptions& o) {
  if (!o.x_label.empty())
    add(svg, fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333\">{}</text>", f1((f.x.p0 + f.x.p1) / 2), f1(f.H - 8),
                         html_escape(o.x_label)));
  if (!o.y_label.empty())
    add(svg, fmt::format("<text x=\"14\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0})\" fill=\"#333\">{1}</text>",
                         f1((f.y.p0 + f.y.p1) / 2), html_escape(o.y_label)));
}

}  // namespace

std::string svg_line_plot(const std::vector<PlotSeries>& series, const PlotOptions& o) {
  const Frame f = plot_frame(series, o);
  std::string svg;
  draw_header(svg, f, o);
  draw_legend(svg, f, series, o);
  draw_bands(svg, f, o);  // under everything else
  draw_y_grid(svg, f);
  draw_x_ticks(svg, f, o);
  add(svg, fmt::format("<path d=\"M{} {}V{}H{}\" fill=\"none\" stroke=\"#444\" stroke-width=\"1\"/>", f1(f.x.p0), f1(f.y.p1), f1(f.y.p0),
                       f1(f.x.p1)));
  draw_reference_lines(svg, f, o);
  for (const PlotSeries& s : series) draw_series(svg, f, s);
  if (!f.has_data)
    add(svg, fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#999\">no data to plot</text>", f1((f.x.p0 + f.x.p1) / 2),
                         f1((f.y.p0 + f.y.p1) / 2)));
  draw_axis_labels(svg, f, o);
  add(svg, "</svg>");
  return svg;
}

}  // namespace pt2diff
