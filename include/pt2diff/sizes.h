// pt2diff/sizes.h — size sweeps: one dynamic compile judged at every size a dynamic dim will see
// (docs/dynamic-shapes.md).
//
//   pt2diff::SizeSweepOptions o;
//   o.dims = {pt2diff::parse_size_dim("s77=1,2,7,16,17")};   // or none: every dynamic dim, default_sizes()
//   pt2diff::SizeSweepResult s = pt2diff::sweep_sizes(program, inputs, o);
//   for (const auto& p : s.points) std::cout << p.size << ": " << pt2diff::level_name(p.level) << "\n";
//
// Every size runs the whole diff (fp64 reference, eager, the compiled graph, the exploded compile and the node
// verdict) through one backend that compiles each region once: the dims the archive exported dynamic compile
// symbolic, so a later size runs the same compiled code unless a guard fails (a recompile, counted per size).
// Inputs per size are the given ones cut, or repeated cyclically, along the swept dim. The smallest failing
// size is localized.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pt2diff/diff.h"

namespace pt2diff {

/// One dim to sweep: the archive's symbol ("s77") or an input dim ("x.size(0)"), and its sizes (empty: the
/// default set, default_sizes()).
struct SizeDim {
  std::string name;
  std::vector<int64_t> sizes;
};

/// "s77=1,2,7" or "x.size(0)=1,2,7" (or "s77": default sizes). Throws pt2diff::Error(Usage) naming the form
/// expected for anything else, or a size that is negative.
SizeDim parse_size_dim(const std::string& spec);

/// The default sizes of a dim whose range is [min, max] (max nullopt: unbounded, capped at 4096): the bounds,
/// 1, small primes (3, 5, 7, 11, 13), every power of two and its neighbours (the vector tails: 15, 17, 31,
/// 33, ...), ascending, inside the range.
std::vector<int64_t> default_sizes(int64_t min, std::optional<int64_t> max);

struct SizeSweepOptions {
  /// The runs (compiler, rule, exploded, node verdict) at every size; `diff.localize` applies to the smallest
  /// failing size only, `diff.max_memory` to each size (a size over it is refused, the others judged).
  DiffOptions diff;
  /// The dims to sweep, each with the others at the given inputs' sizes. Empty: every dynamic symbol of the
  /// graph's inputs, default sizes.
  std::vector<SizeDim> dims;
  /// Localize at the smallest failing size of each dim (DiffOptions::localize there).
  bool localize = true;
  /// Static against dynamic: at the first dim's smallest failing size (else the given inputs' size), the graph
  /// compiled static too (BackendOptions::static_shapes) and both judged against fp64 (one more compile). Not in a
  /// sweep that is static itself (diff.backend.static_shapes: every size compiled on its own).
  bool static_check = true;
};

/// The same graph compiled static and dynamic at one size, each judged against eager with fp64 as referee.
struct StaticCheck {
  std::string symbol;
  int64_t size = 0;
  Level dynamic_level = Level::Pass, static_level = Level::Pass;
  double dynamic_ratio = 0, static_ratio = 0;  ///< worst output error ratio of each (compiled RMSE to fp64 / eager's)
  double dynamic_node_ratio = 0, static_node_ratio = 0;  ///< the node verdict's worst ratio of each
  bool differ = false;      ///< their levels differ: one compile is wrong where the other is not
  std::string summary;      ///< one line: which is wrong, or that they agree
};

/// One size of one dim, judged (or refused).
struct SizePoint {
  std::string symbol;            ///< the archive's symbol swept ("s77")
  int64_t size = 0;
  bool judged = false;
  std::string refused;           ///< when !judged: one line (the range it is outside, the memory estimate, ...)
  Level level = Level::Pass;     ///< result_level() of the run at this size
  bool fails = false;            ///< counts_as_failing() of that run
  bool compiled_failed = false;  ///< a compile or compiled run failed at this size
  double worst_ratio = 0;        ///< the largest output error ratio (compiled RMSE to fp64 / eager's)
  std::string worst_output;
  double node_ratio = 0;         ///< the node verdict's worst ratio (exploded compile against eager)
  std::string node;              ///< the node verdict's first finding, else its worst node
  std::string culprit;           ///< the localization's culprit ("sigmoid"), at the smallest failing size
  int64_t recompiles = 0;        ///< compiles this size caused past the first (a guard failed)
  double seconds = 0;
};

struct SizeSweepResult {
  std::string graph, inputs;         ///< the archive and where the base inputs came from
  std::vector<std::string> symbols;  ///< the dims swept, in order
  /// For each symbol: "x.size(0)" and the exported range, "x.size(0) in [2, 64]".
  std::vector<std::string> described;
  /// Dims asked for that cannot be swept (not a dynamic dim, no such input): one line each; none swept.
  std::vector<std::string> refused_dims;
  std::vector<SizePoint> points;     ///< per symbol, sizes ascending
  /// How the first compile treated the dynamic dims (CompileRecord::shapes of the whole graph).
  std::optional<ShapeCompile> shapes;
  /// The run at each symbol's smallest failing size, localized (SizeSweepOptions::localize).
  std::vector<DiffResult> localized;
  std::optional<StaticCheck> static_check;  ///< SizeSweepOptions::static_check, when a size was judged
  /// Compiles the sweep made: each region once through the backend every size shares, plus the static check's.
  size_t compiles = 0;
  int64_t recompiles = 0;            ///< recompiles the sizes caused in those compiled regions
  double seconds = 0;
};

/// Runs the sweep. Throws pt2diff::Error(Usage) when the graph has no dynamic dim to sweep at all; sizes that
/// cannot run are refused one by one (SizePoint::refused), dims that cannot be swept in refused_dims.
SizeSweepResult sweep_sizes(const Program& program, const BoundInputs& inputs, const SizeSweepOptions& options);

/// The size a point's inputs were resized to, as bind_inputs sees them: every tensor input whose dim carries
/// `symbol` cut to `size` along it, or repeated cyclically past its given size. Throws Error(BadInputs) when
/// bind_inputs refuses it (a size outside the exported range names the dim and the range).
BoundInputs resize_inputs(const Program& program, const BoundInputs& inputs, const std::string& symbol, int64_t size);

/// A table for the terminal: size, verdict, worst output ratio, the node, recompiles; then each localized culprit.
std::string sizes_to_text(const SizeSweepResult& result);
/// One row per point: symbol, size, judged, level, fails, worst_ratio, worst_output, node_ratio, node, culprit,
/// recompiles, seconds, refused.
std::string sizes_to_csv(const SizeSweepResult& result);
/// docs/sizes.schema.json.
std::string sizes_to_json(const SizeSweepResult& result);
/// The JSON schema of sizes_to_json(), read off the description the writer writes by (engine/report/sizes_report.cpp);
/// docs/sizes.schema.json is this text (JsonSchemas.AreTheDocsSchemas).
std::string sizes_json_schema();
/// One self-contained HTML page: the table and a plot of the worst ratios against the size, failing sizes marked.
std::string sizes_to_html(const SizeSweepResult& result);

}  // namespace pt2diff
