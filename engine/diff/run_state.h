// engine/diff/run_state.h — what the stages of the diff pipeline (stages.h) share: what the run was
// given, what each stage adds, and the DiffResult being built. One run, one state, built in order.
#pragma once

#include <atomic>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/localize/compiled_oracle.h"
#include "graphs/search/whole_graph_oracle.h"
#include "pt2diff/advanced/backend.h"
#include "pt2diff/diff.h"
#include "pt2diff/values.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {

struct RegionJob;

/// The exploded compile (compile_exploded): every op alone, fed the kept fp64 values of its inputs rounded to
/// their dtypes. When it ran ahead on a second worker (compile_ahead.h), `record` holds how it went, for
/// compile_exploded to append in its own place.
/// What the exploded compile says of one compared value (judge_exploded), for compile_exploded to enter into
/// DiffResult::nodes.
struct ExplodedValue {
  size_t row = 0;         ///< its node's index in DiffResult::nodes
  size_t value = 0;       ///< its index in that node's values
  Metrics compiled_local;  ///< the compiled value of the op alone vs fp64
  bool fails = false;     ///< it fails the rule alone against eager's local value (counts_as_failing)
  double ratio = 0;       ///< compiled_local_ratio(): how many times eager's local error
  at::Tensor kept;        ///< the compiled value itself, when DiffOptions::keep_values
};

struct ExplodedCompile {
  RegionSpec ops;
  std::vector<c10::IValue> inputs;                   ///< one per ops.inputs entry
  std::optional<std::vector<c10::IValue>> outputs;  ///< one per ops.outputs entry; nullopt when the compiler failed
  DiffResult record;                                 ///< its compiles entry and compiled_failed
  /// Its outputs judged (judge_exploded), when that was done ahead (compile_ahead.h: while the whole graph still
  /// compiles); `outputs` are then let go unless kept. `judge_error`: what judging threw, rethrown in its stage.
  std::optional<std::vector<ExplodedValue>> judged;
  std::exception_ptr judge_error;
};

/// The compiles a run starts ahead of their stages (compile_ahead.h, DiffOptions::overlap), owned by that scheduler:
/// the stages compile_graph and compile_exploded take what they made.
struct CompilesAhead {
  std::unique_ptr<Backend> exploded_backend;   ///< the second worker of the exploded compile ahead
  std::future<void> exploded_start;            ///< its start-up (Backend::start_ahead), waited for before it is used
  std::atomic<bool> exploded_starting{false};  ///< that start-up is under way (no progress lines from it meanwhile)
  std::optional<ExplodedCompile> exploded;     ///< the exploded compile made ahead, for compile_exploded
  std::future<void> exploded_retired;          ///< that worker's end (shut down, killed, reaped) in a thread of its own
  std::atomic<bool> graph_compiling{false};    ///< the whole graph's compile ahead is under way (progress lines)
  std::future<void> graph;                     ///< the whole graph's compile; last: waited for (destroyed) before what its thread writes
};

struct RunState {
  RunState(const Program& program, const BoundInputs& inputs, const DiffOptions& options, Backend& backend,
           std::shared_ptr<std::string> step)
      : program(program), inputs(inputs), options(options), backend(backend), step(std::move(step)), interpreter(program) {
    result.values = std::make_shared<DiffValues>();
  }

  // Given.
  const Program& program;
  const BoundInputs& inputs;
  const DiffOptions& options;
  Backend& backend;
  std::shared_ptr<std::string> step;  ///< the progress label of the probe being compiled (localization)
  Interpreter interpreter;

  // plan_run: what this graph and backend allow.
  bool mutating = false;  ///< an op writes in place: kept values are copied
  StorageModel storage;   ///< which values share a storage and which nodes write it (Interpreter::storage_model)
  /// The results judged: the program's outputs (ExportedGraph::output_specs), then each graph input the graph
  /// writes in place, its value after the graph (kind UserInputMutation, BufferMutation or ParameterMutation,
  /// its arg the input itself). s.runs' outputs follow this order.
  std::vector<OutputSpec> outputs;
  bool exploded = false;  ///< compile every op on its own
  bool bisect = false;    ///< localize a divergence
  bool keep = false;      ///< keep every eager and fp64 value (exploded compile, probes, hints)

  // run_references: the eager and fp64 runs, every value kept when `keep`.
  ReferenceRuns reference;
  LockstepResult runs;
  std::set<std::string> uncomparable_values;  ///< bitcasts, float8: shown, never scored

  // compile_graph: the whole graph through the compiler; nullopt when it failed.
  RegionSpec whole;
  std::vector<c10::IValue> whole_inputs;  ///< one per whole.inputs entry
  std::optional<std::vector<c10::IValue>> compiled;
  std::optional<KernelMap> observed;  ///< its kernel map, when it was asked for (DiffOptions::kernel_map)
  /// run_with_eager_nodes: the whole graph compiled with a set of nodes eager (sorted ids), its outputs or its
  /// failure. The node verdict's confirmation and --workaround's verification often leave the same set
  /// eager: the second asks the first's compile (the same region, backend and inputs), and judges it anew.
  struct EagerNodesCompile {
    std::optional<std::vector<c10::IValue>> outputs;
    CompileRecord record;
  };
  std::map<std::vector<NodeId>, EagerNodesCompile> eager_nodes_compiles;

  // localize_divergence: the culprit is a random op whose streams differ (hints still try the levers).
  bool random_first = false;
  // localize_in_region: the culprit was found inside an autocast region, by the main job's stages up to
  // the culprit run on the region inlined; that job's graph and values are where the culprit's nodes are.
  std::shared_ptr<RegionJob> region_job;

  DiffResult result;

  bool owns_backend = false;  ///< `backend` is diff()'s own, made for this run
  /// compile_ahead.h (DiffOptions::overlap): the compiles started before their stages, taken by them. Last: its
  /// threads end before what they write.
  CompilesAhead ahead;

  /// The job whose graph the culprit names: the region's when localize_in_region went inside one (its own
  /// culprit_job(), for a region inside that), else this one. Its localization is the culprit as found
  /// there; the repro and the hints are made from it.
  RunState& culprit_job();
};

/// The main job on an autocast region inlined (localize_in_region), with what its state refers to.
struct RegionJob {
  Program program;  ///< the run's, its graph the region inlined (weights and inputs shared, not copied)
  DiffOptions options;
  std::shared_ptr<std::string> step;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<RunState> state;  ///< last: destroyed before what it refers to
};

inline RunState& RunState::culprit_job() { return region_job ? region_job->state->culprit_job() : *this; }

/// The precision a node works in: the coarsest floating dtype among its tensor inputs and outputs
/// (fewest mantissa bits). ULPs in it make a bf16 → fp32 cast score like the bf16 value it carries.
std::optional<at::ScalarType> working_dtype(const Graph& g, const Node& n);

/// compile_graph's work: the whole graph compiled and run (whole, whole_inputs, compiled, observed, compiles[0]).
void compile_whole_graph(RunState& s);
/// The exploded compile's region and inputs (outputs not yet computed).
ExplodedCompile exploded_request(const RunState& s);
/// Each compared value of the exploded compile's outputs `x.outputs` measured against fp64 and judged against
/// the same op run alone in eager (the interpreter runs every op on `x.inputs`, one op's results held at a
/// time). Reads the state, changes none of it: it may run while the whole graph's compile is under way.
std::vector<ExplodedValue> judge_exploded(const RunState& s, const ExplodedCompile& x);

/// Compiles and runs one region, recording how it went in `result.compiles`; nullopt when the backend
/// failed (and `result.compiled_failed` is set). With `kernel_map` and RegionSpec::observe, the run's
/// kernel map too.
std::optional<std::vector<c10::IValue>> compile_and_run(Backend& backend, const RegionSpec& region,
                                                        const std::vector<c10::IValue>& inputs, const std::string& what,
                                                        DiffResult& result, std::optional<KernelMap>* kernel_map = nullptr);

/// Graph output `i` (ExportedGraph::output_specs) in `outputs`, one value per s.whole.outputs entry (a
/// compiled run of the whole graph); None when the region does not return it.
c10::IValue compiled_output(const RunState& s, size_t i, const std::vector<c10::IValue>& outputs);
/// Graph output `i` judged with the run's rule: `compiled` against eager, the fp64 value as referee where it
/// is comparable; nullopt when the output is not a tensor (never judged).
std::optional<Verdict> judge_output(const RunState& s, size_t i, const at::Tensor& compiled, const Metrics* compiled_to_fp64 = nullptr,
                                    const Metrics* eager_to_fp64 = nullptr);

/// The whole graph compiled and run with some nodes left eager (RegionSpec::eager, the user's
/// torch.compiler.disable), every output judged with the run's rule (EagerNodesRun: whole_graph_oracle.h):
/// what --workaround's search and the node verdict's confirmation ask.
/// One such compile and run (`suspicious_fails`: suspicious outputs count as failing).
EagerNodesRun run_with_eager_nodes(RunState& s, const std::vector<NodeId>& eager, bool suspicious_fails, const std::string& what);
/// Every output of a whole-graph compile (`outputs`, by s.whole.outputs) judged with the run's rule, into `a`'s failing and
/// worst output (run_with_eager_nodes's judging; the compiler search's too).
void judge_whole_outputs(const RunState& s, const std::vector<c10::IValue>& outputs, bool suspicious_fails, EagerNodesRun& a);

/// The hint experiments (engine/hints/) on a window, fed the kept fp64 values rounded to their dtypes.
/// A compiler failure here costs the hints, never the report. Needs `state.keep`'s values.
std::vector<Hint> explain_window(const RunState& state, const Culprit& culprit);

}  // namespace pt2diff
