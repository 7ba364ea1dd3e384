// engine/report/repro_writer.cpp — a repro is only useful if it reproduces: the window is exported
// with torch.export (by the Inductor worker: Python owns that format), fed the same fp64-exact
// boundary values the localization used, and the command keeps the compiled side and tolerance.
#include "engine/report/repro_writer.h"

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>

#include "engine/backends/backends.h"
#include "engine/backends/worker_backend.h"
#include "engine/execution/op_catalog.h"
#include "graphs/graph_text.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace fs = std::filesystem;

namespace {

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The op part of a target, as fault specs name it: "torch.ops.aten.mm.default" → "aten.mm".
std::string op_of(const Node& n) {
  std::string t = short_target(n.target);
  auto dot = t.rfind('.');
  return dot == std::string::npos ? t : t.substr(0, dot);
}

/// A fault spec naming a node of the full graph, renamed for the repro: node names change when the
/// window is exported again, the K-th occurrence of its op inside the window does not.
std::string spec_for_repro(const std::string& spec, const Graph& g, const std::vector<NodeId>& window, bool on_cpu) {
  if (spec.rfind("fault:", 0) != 0) return spec;
  const std::string body = spec.substr(6);
  const std::string planted = fault_node(body, g);
  const std::string kind = body.substr(body.rfind(':') + 1);
  int k = 0;
  for (NodeId id : window) {
    const Node& n = g.node(id);
    if (n.name == planted) {
      for (NodeId before : window)
        if (before <= id && op_of(g.node(before)) == op_of(n)) ++k;
      // Exported on the CPU, a CUDA-only fused attention is its math form there.
      const bool substituted = on_cpu && classify_op(n.target).route == OpRoute::CpuSubstitute;
      return fmt::format("fault:{}#{}:{}", substituted ? "aten._scaled_dot_product_attention_math" : op_of(n), k, kind);
    }
  }
  return spec;
}

bool compiles_for_a_device(const std::string& compiled) { return compiled == "inductor" || compiled.rfind("external:", 0) == 0; }

/// Where the window is exported: a GPU export's window on the GPU when the compiler targets it (the
/// repro keeps the fused kernels the bug is in); otherwise on the CPU, which every machine can load.
std::string repro_device(const Program& program, const DiffOptions& options) {
  const bool gpu_compile = compiles_for_a_device(options.compiled) && options.backend.device.rfind("cuda", 0) == 0;
  return program.export_device.type != "cpu" && gpu_compile ? options.backend.device : "cpu";
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
  const RegionSpec region = RegionSpec::fused(g, window, g.node(window.back()).output_values());
  std::vector<c10::IValue> inputs;
  for (ValueId v : region.inputs) inputs.push_back(refs.rounded[static_cast<size_t>(v)]);
  try {
    BackendOptions worker_options = options.backend;
    worker_options.device = repro_device(program, options);
    make_inductor_worker(program, worker_options)->export_region(region, inputs, repro.archive, repro.inputs);
  } catch (const BackendFailure& f) {
    repro.message = f.what();
    return repro;
  } catch (const Error& e) {
    repro.message = e.what();
    return repro;
  }
  std::string command = fmt::format("pt2diff {} {} --compiled {}", repro.archive, repro.inputs,
                                    quoted(spec_for_repro(options.compiled, g, window, repro_device(program, options) == "cpu")));
  if (options.rule.tol != ToleranceRule{}.tol) command += fmt::format(" --tol {:g}", options.rule.tol);
  for (const std::string& kv : options.backend.inductor_config) command += " --inductor-config " + quoted(kv);
  if (compiles_for_a_device(options.compiled) && options.backend.device != "cpu") command += " --device " + options.backend.device;
  repro.command = command;
  std::ofstream readme(fs::path(options.repro_dir) / "README.md");
  readme << fmt::format(
      "# pt2diff repro: {}\n\n{}\n\nFrom {} ({} node{}: {}). The archive is the window alone, exported with "
      "torch.export; its inputs are the values the localization fed it (fp64 reference values rounded to their "
      "dtypes, weights included as inputs).\n\n```\n{}\n```\n",
      culprit.nodes.size() == 1 ? culprit.nodes.front() : culprit.nodes.front() + " .. " + culprit.nodes.back(), culprit.summary,
      program.path, culprit.nodes.size(), culprit.nodes.size() == 1 ? "" : "s", fmt::join(culprit.nodes, ", "), command);
  repro.ok = true;
  return repro;
}

}  // namespace pt2diff
