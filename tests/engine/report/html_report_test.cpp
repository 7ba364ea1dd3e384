// tests/engine/report/html_report_test.cpp — the SVG plots (log axes, escaping, bands and lines) and
// the HTML report (escaping of graph strings, the sections, the culprit's neighbourhood).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "../../test_support.h"
#include "engine/report/svg_plot.h"
#include "pt2diff/diff.h"
#include "pt2diff/html.h"
#include "pt2diff/inputs.h"
#include "pt2diff/program.h"

namespace pt2diff {
namespace {

using testing::fixture;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST(SvgPlot, LogAxesSkipNonPositiveAndNonFinitePoints) {
  PlotSeries s{"err", "#123456", {{0, 1}, {1, 0}, {2, -1}, {3, 100}, {4, std::nan("")}, {5, INFINITY}}};
  PlotOptions o;
  o.log_y = true;
  const std::string svg = svg_line_plot({s}, o);
  // (0, 1) and (3, 100) survive, with no drawn neighbour: two dots, no line through the skipped ones.
  EXPECT_EQ(count(svg, "<polyline"), 0u) << svg;
  EXPECT_EQ(count(svg, "r=\"2.6\""), 2u) << svg;
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  // Decades from 1 to 100 are labelled.
  EXPECT_NE(svg.find(">100</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">10</text>"), std::string::npos) << svg;

  PlotSeries line{"err", "#123456", {{1, 1}, {2, 2}, {3, 4}, {0, 5}}};
  PlotOptions ox;
  ox.log_x = true;
  const std::string svg_x = svg_line_plot({line}, ox);
  EXPECT_EQ(count(svg_x, "<polyline"), 1u) << "x = 0 is dropped on a log x axis";
  EXPECT_EQ(count(svg_x, "<polyline points=\"") , 1u);
  const size_t begin = svg_x.find("<polyline points=\"") + 18;
  const std::string points = svg_x.substr(begin, svg_x.find('"', begin) - begin);
  EXPECT_EQ(count(points, ","), 3u) << points;
}

TEST(SvgPlot, EscapesEveryTextAndDrawsBandsAndLines) {
  PlotSeries s{"a<b & \"c\"", "#d6336c", {{0, 1}, {1, 2}, {2, 3}}};
  s.point_titles = {"<x>", "y", "z"};
  PlotOptions o;
  o.id = "my-plot";
  o.title = "<title>";
  o.x_label = "x & y";
  o.y_label = "ulp";
  o.x_ticks = {{0, "<script>"}, {1, "b"}, {2, "c"}};
  o.x_bands = {{0.5, 1.5}};
  o.x_band_labels = {"cul<prit"};
  o.h_lines = {{"tol<1>", 2.5, "#e8590c"}};
  o.v_lines = {{"v&", 1.0}};
  const std::string svg = svg_line_plot({s}, o);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << "starts with the element, no prolog";
  EXPECT_NE(svg.find("id=\"my-plot\""), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos) << svg;
  EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_NE(svg.find("&lt;title&gt;"), std::string::npos);
  EXPECT_NE(svg.find("x &amp; y"), std::string::npos);
  EXPECT_NE(svg.find("<title>&lt;x&gt;</title>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"band\""), 1u);
  EXPECT_NE(svg.find("cul&lt;prit"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"h-line\""), 1u);
  EXPECT_NE(svg.find("tol&lt;1&gt;"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"v-line\""), 1u);
  EXPECT_NE(svg.find("v&amp;"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 1u);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
}

TEST(SvgPlot, EmptyPlotSaysSo) {
  const std::string svg = svg_line_plot({}, PlotOptions{});
  EXPECT_NE(svg.find("no data to plot"), std::string::npos);
}

TEST(HtmlEscape, AllFiveCharacters) { EXPECT_EQ(html_escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"); }

/// A result made by hand: a node whose name is markup, named as the culprit, with a hint.
DiffResult hostile_result() {
  const std::string evil = "<script>alert(1)</script>";
  DiffResult r;
  r.graph = "g<1>.pt2";
  r.inputs = "in&puts.pt";
  r.compiled = "fault: <b>";
  r.diverged = true;
  r.warnings = {"exported on <w>"};
  r.fixups = {"aten.full.default: device <f> -> cpu"};
  NodeError n;
  n.name = evil;
  n.target = "aten.mm.default";
  n.source = "model.py:1 in forward: y = x < 3 & z";
  n.module_path = "<m>";
  n.local_ulp = 0.5;
  n.compiled_local_ulp = 300;
  ValueError v;
  v.name = evil;
  v.dtype = "float32";
  v.shape = "[2, 2]";
  v.local.max_ulp = 0.5;
  v.local.max_rel = 6e-8;
  v.propagated.max_ulp = 2;
  v.propagated.max_rel = 2e-7;
  v.compiled_local.max_ulp = 300;
  v.compiled_local.max_rel = 3e-3;
  v.has_compiled_local = true;
  n.values.push_back(v);
  r.nodes.push_back(n);
  r.ranking.push_back(0);
  OutputVerdict o;
  o.name = evil;
  o.role = "user_output";
  o.verdict.reason = "rmse_exceeds_bound";
  o.verdict.detail = "a < b";
  r.outputs.push_back(o);
  Localization l;
  l.failing_outputs = {evil};
  l.culprit.kind = Culprit::Kind::SingleOp;
  l.culprit.nodes = {evil};
  l.culprit.ops = {"aten.mm.default"};
  l.culprit.sources = {n.source};
  l.culprit.module_paths = {"<m>"};
  l.culprit.summary = evil + " diverges";
  Hint h;
  h.kind = "dtype_promotion";
  h.finding = "lower_precision_than_promotion";
  h.summary = "summary <i>";
  h.suggestion = "do <this>";
  h.notes = {"note <1>"};
  h.evidence = {{"rmse_compiled_to_fp64", 6e-4}, {"rmse_eager_to_fp64", 2e-8}, {"<ev>", 3}};
  l.hints.push_back(h);
  Probe p;
  p.phase = Phase::FirstFailingEnd;
  p.region = "c1..c1: 1 node, <x>";
  p.fails = true;
  p.verdict.reason = "rmse_exceeds_bound";
  l.probes.push_back(p);
  r.localization = l;
  return r;
}

TEST(HtmlReport, EscapesEveryStringFromTheGraph) {
  const std::string html = to_html(hostile_result(), {nullptr, "pt2diff 'g<1>.pt2'", ""});
  EXPECT_EQ(html.find("<script"), std::string::npos) << "no script at all, and none smuggled in by a node name";
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  for (const char* raw : {"<m>", "<i>", "<this>", "<1>", "<ev>", "<x>", "<b>", "a < b", "x < 3 &", "<w>", "<f>"})
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  EXPECT_NE(html.find("g&lt;1&gt;.pt2"), std::string::npos);
  EXPECT_NE(html.find("pt2diff &#39;g&lt;1&gt;.pt2&#39;"), std::string::npos) << "the command, escaped";
}

TEST(HtmlReport, HasEverySection) {
  const std::string html = to_html(hostile_result(), {nullptr, "pt2diff x", ""});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(html.ends_with("</html>\n"));
  for (const char* id : {"id=\"outputs\"", "id=\"culprit\"", "id=\"hints\"", "id=\"profile\"", "id=\"probes\"", "id=\"reproduce\"",
                         "id=\"nodes\"", "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"error-profile\"", "id=\"error-profile-rel\""})
    EXPECT_NE(html.find(id), std::string::npos) << id;
  EXPECT_NE(html.find("lower_precision_than_promotion"), std::string::npos);
  EXPECT_NE(html.find("rmse_compiled_to_fp64"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"warnbox\"><strong>warning:</strong> exported on &lt;w&gt;</p>"), std::string::npos) << "warnings are shown";
  EXPECT_NE(html.find("<summary>fp64 fix-ups applied</summary>"), std::string::npos);
  EXPECT_NE(html.find("class=\"band\""), std::string::npos) << "the culprit is highlighted in the profile";
  EXPECT_EQ(html.find("culprit-dag"), std::string::npos) << "no program: no neighbourhood";
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
}

TEST(HtmlReport, DrawsTheCulpritNeighbourhoodOfARealRun) {
  Program p = load_program(fixture("attention_core.pt2"));
  DiffOptions o;
  o.compiled = "fault:aten.bmm#2:bf16";
  const DiffResult r = diff(p, bind_inputs(p, load_inputs(fixture("attention_inputs.pt"))), o);
  ASSERT_TRUE(r.localization);
  ASSERT_EQ(r.localization->culprit.nodes, std::vector<std::string>{"bmm_1"});
  const std::string html = to_html(r, {&p, "pt2diff attention_core.pt2", ""});
  const size_t dag = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"culprit-dag\"");
  ASSERT_NE(dag, std::string::npos);
  const std::string svg = html.substr(dag, html.find("</svg>", dag) - dag);
  EXPECT_EQ(count(svg, "class=\"dag-node culprit\""), 1u);
  // bmm_1 reads view_8 and view_9 (its producers) and feeds view_10: all drawn, with edges.
  for (const char* n : {">bmm_1<", ">view_8<", ">view_9<", ">view_10<", ">permute_5<"}) EXPECT_NE(svg.find(n), std::string::npos) << n;
  EXPECT_GE(count(svg, "marker-end="), 4u);
  EXPECT_NE(html.find("id=\"node-bmm_1\""), std::string::npos) << "the per-node table has an anchor for the culprit";
}

}  // namespace
}  // namespace pt2diff
