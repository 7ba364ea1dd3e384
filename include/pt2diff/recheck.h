// pt2diff/recheck.h — one graph judged through the compilers of other torch installations: per torch, the verdict,
// the culprit and the compiled local error at it; between a torch that passes and one that fails, the nodes whose
// compiled local error changed (the regression named); over versions in order, the first bad one by bisection
// (docs/upstream.md).
//
//   pt2diff::RecheckOptions o;
//   o.torches = {pt2diff::parse_torch_install("2.13=/venvs/t213/bin/python"), pt2diff::parse_torch_install("/venvs/t214/bin/python")};
//   pt2diff::RecheckResult r = pt2diff::recheck(program, inputs, o);
//   std::cout << pt2diff::recheck_to_text(r);
//
// The engine's own runs (eager and the fp64 reference) are the same for every torch: only the compiled side
// changes, each torch's Inductor in a worker started with that torch's Python (BackendOptions::python). Every
// version is judged against the one fp64 reference, so their errors are comparable.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pt2diff/options.h"
#include "pt2diff/results.h"

namespace pt2diff {

class Program;
struct BoundInputs;

/// One torch installation: the Python that has it, and what to call it in the table.
struct TorchInstall {
  std::string label;   ///< "2.13", "nightly"; empty: the torch version the Python reports
  std::string python;  ///< the interpreter: a venv's bin/python, a nightly's, a source build's
};

/// "LABEL=PYTHON" or "PYTHON". Throws pt2diff::Error(Usage) for an empty one.
TorchInstall parse_torch_install(const std::string& spec);

/// What a Python says of its torch: the version, or why it cannot be used (one line each).
struct TorchProbe {
  std::string version;   ///< torch.__version__ ("2.14.1+cu130"); empty when it could not be read
  std::string problem;   ///< empty when usable: no such file, no torch, a version outside 2.11-2.14, a hang
};

/// Asks `python` for its torch (`python -c 'import torch; ...'`, at most `timeout_seconds`). A torch outside the
/// versions pt2diff's worker is built and tested for (2.11 to 2.14) is a problem unless `any_version`.
TorchProbe probe_torch(const std::string& python, double timeout_seconds = 120, bool any_version = false);

/// The versions a worker supports: "2.11" <= major.minor <= "2.14".
bool torch_version_supported(const std::string& version);

struct RecheckOptions {
  /// The runs at every torch: compiler, rule, localization, node verdict. `diff.backend.python` is replaced by each
  /// torch's; `diff.compiled` must be a compiler in a worker ("inductor" or "aoti:...").
  DiffOptions diff;
  /// In order, oldest first (bisection reads them as ordered; the table keeps the order).
  std::vector<TorchInstall> torches;
  /// Run only what a bisection needs: the first and last torches, then halves, to the first bad one. Off: every torch.
  bool bisect = false;
  /// Accept a torch outside 2.11-2.14 (its worker may fail; the row then says how).
  bool any_version = false;
  /// A node's compiled local error "changed" between two torches when one is at least this many times the other,
  /// and the larger is above eager's own local error (below it both are rounding).
  double change_factor = 2;
};

/// One torch's verdict on the graph.
struct TorchRow {
  TorchInstall torch;
  std::string version;         ///< as the Python reports it
  bool judged = false;         ///< the diff ran; false: `problem` says why (or the bisection skipped it)
  bool skipped = false;        ///< not run: the bisection did not need it
  std::string problem;         ///< one line: no torch, unsupported version, an archive it cannot load, a worker that died
  Level level = Level::Pass;   ///< result_level() of its run
  bool fails = false;          ///< counts_as_failing() of its run
  bool compiled_failed = false;
  std::string compile_failure; ///< the first failed compile's kind and message, when compiled_failed
  double worst_ratio = 0;      ///< the largest output error ratio (compiled RMSE to fp64 / eager's)
  std::string worst_output;
  double node_ratio = 0;       ///< the node verdict's worst ratio (its compiled local error against eager's)
  std::string node;            ///< the node verdict's first finding, else its worst node
  std::string culprit;         ///< the localization's culprit nodes, when one was named ("sigmoid", "mm .. add_3")
  std::string culprit_op;      ///< their ops
  std::string culprit_source;  ///< the first culprit node's source line
  /// The compiled local error at the culprit, as a ratio to eager's: the culprit (op or window) compiled alone on
  /// fp64-exact inputs, as the localization judged it; 0 when none.
  double culprit_ratio = 0;
  double seconds = 0;
  /// The run itself (nodes with their compiled local errors, the localization): what the regression compares.
  std::optional<DiffResult> result;
};

/// A node whose compiled local error changed between two torches (fp64 the referee of both).
struct NodeChange {
  std::string node, op, source, module_path;
  double before = 0, after = 0;  ///< compiled local relative error (RMSE / RMS(fp64)) at the good and the bad torch
  double eager = 0;              ///< eager's local relative error on the same inputs (the floor)
  double factor = 0;             ///< after / before (below 1: the error shrank)
};

/// Between two adjacent torches whose verdicts differ: what changed.
struct Regression {
  size_t good = 0, bad = 0;   ///< rows: the one that passes and the one that fails
  bool fixed = false;         ///< the later torch is the good one (a fix, not a regression)
  std::vector<NodeChange> changed;  ///< in graph order
  std::string first_diverging;      ///< the failing torch's culprit ("sigmoid (aten.sigmoid.default) at model.py:12")
  std::string summary;              ///< one line
};

/// The first bad torch of an ordered list, found by bisection.
struct Bisection {
  std::optional<size_t> first_bad;  ///< the row; nullopt when the ends agree or a probe could not be judged
  size_t runs = 0;                  ///< torches run
  std::string summary;              ///< one line
};

/// Bisection over `n` ordered versions with `is_bad(i)` (the oracle: true bad, false good, nullopt when version i
/// could not be judged). Assumes the first is good and the last bad (both asked first); returns the first bad index,
/// nullopt when that assumption fails or a probe cannot be judged. Each index asked at most once.
std::optional<size_t> bisect_first_bad(size_t n, const std::function<std::optional<bool>(size_t)>& is_bad, std::string* why = nullptr);

/// The nodes whose compiled local error changed by `factor` between `good` and `bad` (the same graph judged at two
/// torches), in graph order.
std::vector<NodeChange> changed_nodes(const DiffResult& good, const DiffResult& bad, double factor);

struct RecheckResult {
  std::string graph, inputs;
  std::vector<TorchRow> rows;               ///< one per torch, in the order given
  std::vector<Regression> regressions;      ///< one per adjacent pair of judged torches whose verdicts differ
  std::optional<Bisection> bisection;       ///< RecheckOptions::bisect
  double seconds = 0;
};

/// Judges the graph at every torch (or the ones a bisection needs). A torch that cannot be used (no torch, an
/// unsupported version, a worker that cannot load the archive or dies) is a row with its problem; the others
/// still run. Throws pt2diff::Error(Usage) when no torch is given or `diff.compiled` is not a worker's compiler.
RecheckResult recheck(const Program& program, const BoundInputs& inputs, const RecheckOptions& options);

/// The table for a terminal: torch, verdict, worst output ratio, culprit, compiled local error at the culprit; each
/// regression's changed nodes; the bisection's answer; one line per problem.
std::string recheck_to_text(const RecheckResult& result);
/// Every case rechecked (one graph, or each case of a batch summary) as one document: docs/recheck.schema.json.
std::string recheck_to_json(const std::vector<RecheckResult>& cases);
/// The JSON schema of recheck_to_json(), read off the description the writer writes by
/// (engine/report/recheck_report.cpp); docs/recheck.schema.json is this text (JsonSchemas.AreTheDocsSchemas).
std::string recheck_json_schema();

}  // namespace pt2diff
