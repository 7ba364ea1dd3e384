// pt2diff/html.h — the report as one self-contained HTML page: plots and the culprit's graph inline.
//
//   pt2diff::DiffResult r = pt2diff::diff(program, inputs, {});
//   std::ofstream("report.html") << pt2diff::to_html(r, {&program, "pt2diff graph.pt2 inputs.pt --html report.html"});
//
// The page has no script and loads nothing: CSS and SVG are inline, so it opens offline and can be
// attached to a bug. It shows the run, the verdict per output, the culprit with its hints and their
// evidence, the error of every node along the graph order (an SVG plot), the culprit's neighbourhood
// in the graph (SVG), the probe log, the command that reproduces the culprit, and the per-node table.
// Every string from the graph or the user is HTML-escaped.
#pragma once

#include <string>

#include "pt2diff/diff.h"
#include "pt2diff/program.h"

namespace pt2diff {

struct HtmlOptions {
  const Program* program = nullptr;  ///< for the DAG neighbourhood (skipped when null)
  std::string command;               ///< how this run was invoked, shown as the reproduce command when no repro was written
  std::string device;                ///< where the compiled side ran ("cpu", "cuda:0"); empty: from the backend's name when it says
};

/// The page: `<!DOCTYPE html>` to `</html>`, UTF-8.
std::string to_html(const DiffResult& result, const HtmlOptions& options = {});

}  // namespace pt2diff
