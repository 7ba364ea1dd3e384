// engine/diff/repro_writer.cpp — a repro is only useful if it reproduces: the window is exported
// with torch.export (by the Inductor worker: Python owns that format), fed the same fp64-exact
// boundary values the localization used, and the command keeps the compiled side and tolerance.
#include <algorithm>
#include "engine/diff/repro_writer.h"

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>

#include "engine/backends/backends.h"
#include "engine/worker/worker_backend.h"
#include "graphs/wording/wording.h"
#include "pt2diff/backend_spec.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace fs = std::filesystem;

namespace {

/// Where the window is exported: a GPU export's window on the GPU when the compiler targets it (the
/// repro keeps the fused kernels the bug is in); otherwise on the CPU, which every machine can load.
std::string repro_device(const Program& program, const DiffOptions& options) {
  const bool gpu_compile = BackendSpec::parse(options.compiled).targets_device() && options.backend.device.rfind("cuda", 0) == 0;
  return program.export_device.type != "cpu" && gpu_compile ? options.backend.device : "cpu";
}

/// The --compiled spec of the repro: a fault planted at a node of the full graph is renamed for the window;
/// a package (built for the whole graph, it cannot run the window) becomes `aoti`: the window compiled by
/// AOTInductor, as the twin that localization ran through was.
std::string spec_for_repro(const std::string& compiled, const Graph& g, const std::vector<NodeId>& window, bool on_cpu) {
  BackendSpec spec = BackendSpec::parse(compiled);
  if (spec.kind == BackendSpec::Kind::Fault) spec.argument = fault_spec_for_window(spec.argument, g, window, on_cpu);
  if (spec.kind == BackendSpec::Kind::Aoti) spec.argument.clear();
  return spec.str();
}

/// The window's region: the culprit's nodes with the last one's outputs, each value read before a later write of the
/// window (a write after a read: the value the write clobbers), and every input the window writes (returned too, as
/// torch.export returns a mutated input).
RegionSpec window_region(const Graph& g, const std::vector<NodeId>& window, const ReferenceRuns& refs) {
  std::vector<ValueId> judged = g.node(window.back()).output_values();
  if (refs.storage)
    for (ValueId v : read_before_written(g, *refs.storage, window))
      if (std::find(judged.begin(), judged.end(), v) == judged.end()) judged.push_back(v);
  RegionSpec region = RegionSpec::fused(g, window, judged);
  if (refs.storage)
    for (ValueId v : written_region_inputs(*refs.storage, region))
      if (std::find(region.outputs.begin(), region.outputs.end(), v) == region.outputs.end()) region.outputs.push_back(v);
  return region;
}

/// Exports the window with its inputs through the Inductor worker, with test_repro.py and, when the worker is the
/// compiler under test on the device the run compiled for, Inductor's own files of the window. Throws what the worker
/// throws.
void export_window(const Program& program, const Culprit& culprit, const RegionSpec& region, const std::vector<c10::IValue>& inputs,
                   const DiffOptions& options, Repro& repro) {
  BackendOptions worker_options = options.backend;
  worker_options.device = repro_device(program, options);
  WorkerBackend::UnitTest test;
  test.path = (fs::path(options.repro_dir) / "test_repro.py").string();
  test.graph = program.path;
  test.nodes = fmt::format("{} node{}: {}", culprit.nodes.size(), culprit.nodes.size() == 1 ? "" : "s", fmt::join(culprit.nodes, ", "));
  test.summary = culprit.summary;
  test.rule = rule_name(options.rule);
  test.tol = options.rule.tol;
  // The compiler's own files for the window, when the worker that exports it is the compiler under test (Inductor
  // in the worker's Python, with the run's settings); another compiled side's artifacts are its own.
  WorkerBackend::Artifacts artifacts;
  artifacts.dir = (fs::path(options.repro_dir) / "inductor").string();
  artifacts.settings = worker_options;
  // Only from a compile on the device the run compiled for: a CPU export diffed on a GPU has its window exported (and
  // its test run) on the CPU, whose compile is not the one that went wrong.
  const bool inductor = options.compiled == "inductor";
  const bool same_device = worker_options.device == options.backend.device;
  make_inductor_worker(program, worker_options)
      ->export_region(region, inputs, repro.archive, repro.inputs, &test, inductor && same_device ? &artifacts : nullptr);
  if (test.status == "written")
    repro.test = test.path;
  else
    repro.test_message = test.status;
  repro.artifacts = artifacts.files;
  repro.artifacts_message =
      !inductor      ? wording::no_artifacts_not_inductor(options.compiled)
      : !same_device ? wording::no_artifacts_other_device(options.backend.device, program.export_device.type, worker_options.device)
                     : artifacts.status;
}

/// The repro directory's README.md: what the window is, the command, the unit test and the compiler's files.
void write_readme(const Program& program, const Culprit& culprit, const Repro& repro, const std::string& dir) {
  std::ofstream readme(fs::path(dir) / "README.md");
  readme << fmt::format(
      "# pt2diff repro: {}\n\n{}\n\nFrom {} ({} node{}: {}). The archive is the window alone, exported with "
      "torch.export; its inputs are the values the localization fed it (fp64 reference values rounded to their "
      "dtypes, weights included as inputs).\n\n```\n{}\n```\n\n{}\n{}",
      culprit.nodes.size() == 1 ? culprit.nodes.front() : culprit.nodes.front() + " .. " + culprit.nodes.back(), culprit.summary,
      program.path, culprit.nodes.size(), culprit.nodes.size() == 1 ? "" : "s", fmt::join(culprit.nodes, ", "), repro.command,
      repro.test.empty() ? "No unit test was written: " + repro.test_message
                         : "`test_repro.py` is the same window as a PyTorch unit test (plain PyTorch, no pt2diff, in the style of "
                           "`test/inductor/test_torchinductor.py`): `python test_repro.py` or `pytest test_repro.py`; it fails while the "
                           "compiler bug is there and passes without it.",
      repro.artifacts.empty() ? ""
                              : "\n`inductor/` holds the compiler's own files for the window, from one compile of it with Inductor's debug "
                                "trace on (what `TORCH_COMPILE_DEBUG=1` writes): `fx_graph_transformed.py` (the post-grad graph), "
                                "`output_code.py` (the generated code), `ir_post_fusion.txt`, `fx_graph_readable.py`, "
                                "`fx_graph_runnable.py`.\n");
}

}  // namespace

Repro write_repro(const Program& program, const Culprit& culprit, const ReferenceRuns& refs, const DiffOptions& options) {
  Repro repro;
  const Graph& g = program.ir.graph;
  std::vector<NodeId> window;
  for (const std::string& name : culprit.nodes)
    for (const Node& n : g.nodes())
      if (n.name == name) window.push_back(n.id);
  if (window.empty()) {
    repro.message = "no culprit to write";
    return repro;
  }
  std::error_code ec;
  fs::create_directories(options.repro_dir, ec);
  if (ec) {
    repro.message = fmt::format("cannot create {}: {}", options.repro_dir, ec.message());
    return repro;
  }
  repro.archive = (fs::path(options.repro_dir) / "repro.pt2").string();
  repro.inputs = (fs::path(options.repro_dir) / "repro_inputs.pt").string();
  const RegionSpec region = window_region(g, window, refs);
  const std::vector<c10::IValue> inputs = refs.region_inputs(region);
  try {
    export_window(program, culprit, region, inputs, options, repro);
  } catch (const BackendFailure& f) {
    repro.message = f.what();
    return repro;
  } catch (const Error& e) {
    repro.message = e.what();
    return repro;
  }
  // Every option that shapes the verdict, written back as the CLI's flags (to_flags), with the fault
  // renamed for the window and --device explicit unless it is the CPU.
  DiffOptions again = options;
  again.compiled = spec_for_repro(options.compiled, g, window, repro_device(program, options) == "cpu");
  std::vector<std::string> words = {"pt2diff", repro.archive, repro.inputs};
  for (std::string& flag : to_flags(again, "cpu")) words.push_back(std::move(flag));
  repro.command = shell_line(words);
  write_readme(program, culprit, repro, options.repro_dir);
  repro.ok = true;
  return repro;
}

}  // namespace pt2diff
