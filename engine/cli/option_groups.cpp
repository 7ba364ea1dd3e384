// engine/cli/option_groups.cpp — option groups shared by commands.
#include "engine/cli/command.h"
#include "graphs/memory_estimate.h"
#include "pt2diff/error.h"
#include "pt2diff/advanced/interpreter.h"

#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <sys/resource.h>

namespace pt2diff::cli {

void GraphOptions::add_to(CLI::App& app, bool required) {
  app.add_option("GRAPH", graph, "torch.export archive (.pt2) written by torch.export.save")->required(required);
  app.add_option("--model", model, "which models/<name>.json of the archive (default: the only one, or 'model')");
  app.add_option("--load-library", libraries,
                 "a shared library registering custom ops (TORCH_LIBRARY), loaded first here and in the compiler's worker; repeatable");
}

Program GraphOptions::load() const {
  for (const std::string& library : libraries) load_op_library(library);
  return load_program(graph, LoadOptions{model});
}

namespace {

/// A size flag ("16G", "512M", bytes, "none" for -1) stored in `target`.
void add_size_option(CLI::App& app, const std::string& flag, int64_t& target, const std::string& help) {
  app.add_option_function<std::string>(
      flag,
      [flag, &target](const std::string& text) {
        auto bytes = parse_byte_size(text);
        if (!bytes) throw CLI::ValidationError(flag, "'" + text + "' is not a size (16G, 512M, 1.5T, bytes) or none");
        target = *bytes;
      },
      help);
}

}  // namespace

void InputOptions::add_to(CLI::App& app) {
  auto* file = app.add_option("INPUTS", inputs,
                              "torch.save file of the inputs: tuple/list (positional), dict (by name) or (args, kwargs); "
                              "default: the archive's sample inputs");
  auto* rnd = app.add_flag("--random-inputs", random, "draw inputs from the graph's metadata instead");
  app.add_option("--seed", seed,
                 "seed for --random-inputs, and of the random generators before every run (engine and compiled side alike)")
      ->default_val(0);
  rnd->excludes(file);
  add_size_option(app, "--max-memory", max_memory,
                  "refuse a run whose values would need more memory than this, estimated from the graph's shapes before "
                  "anything is allocated: 16G, 512M, none (default: the memory available when it starts)");
}

void CompilerOptions::add_to(CLI::App& app) {
  app.add_option("--compiled", compiled, "what plays the compiled side: inductor, eager, aoti (the archive compiled by AOTInductor), aoti:PACKAGE.pt2, "
                 "external:COMMAND, fault:NODE:KIND")
      ->default_val("inductor");
  app.add_option("--device", device,
                 "device of the eager runs and the compiler (inductor, external): cpu or cuda[:N]; default: the device the "
                 "graph was exported on when this machine has it, else cpu");
  app.add_option("--reference-device", reference_device,
                 "where the fp64 reference runs in a GPU run: auto (the GPU when it fits in --gpu-memory, else the CPU), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->default_val("auto");
  add_size_option(app, "--gpu-memory", gpu_memory,
                  "GPU memory the engine's runs may hold (estimated before they start): 16G, 512M, none (default: what the "
                  "GPU has free); with less, --reference-device auto runs the fp64 reference on the CPU");
  app.add_option("--inductor-config", backend.inductor_config,
                 "Inductor config override KEY=VALUE (a Python literal), repeatable: emulate_precision_casts=True");
  app.add_option("--matmul-precision", backend.matmul_precision,
                 "torch.set_float32_matmul_precision as your program sets it (high: TF32 on CUDA), for the eager runs and the "
                 "compiled side alike")
      ->check(CLI::IsMember({"highest", "high", "medium"}));
  app.add_flag("--no-tf32", backend.no_tf32, "TF32 off for matmuls and cuDNN convolutions (CUDA), eager and compiled alike");
  app.add_option("--timeout", backend.timeout_seconds, "seconds one compile or run may take before the worker is killed and the failure reported")
      ->default_val(900.0);
  app.add_option("--worker-python", backend.python, "Python of the Inductor worker (default: the venv pt2diff was built with)");
  app.add_option("--inductor-cache", backend.inductor_cache_dir, "Inductor cache directory (default: ~/.cache/pt2diff/inductor)");
}

void RuleOptions::add_to(CLI::App& app, bool with_tol) {
  app.add_option("--rule", rule, "verdict rule: same (torch._dynamo.utils.same, default), allclose (to fp64 at --tol), "
                                 "ulp:N (max ULP distance to fp64), cosine[:C] (cosine similarity to fp64 >= C, 0.99), "
                                 "relative (errors at the fp64 value's scale, against eager's and a threshold per dtype: "
                                 "docs/verdicts.md)")
      ->default_val("same");
  if (with_tol)
    app.add_option("--tol", parsed.tol, "tolerance of the verdict rule (atol = rtol for the allclose step)")->default_val(1e-3);
  app.add_option("--fp32-multiplier", parsed.fp32_multiplier, "RMSE multiplier for fp32 outputs")->default_val(2.0);
  app.add_option("--low-precision-multiplier", parsed.low_precision_multiplier,
                 "RMSE multiplier for fp16/bf16 outputs and outputs with fewer than 1000 elements")
      ->default_val(3.0);
  app.add_flag("--small-tensor-multipliers", parsed.small_tensor_multipliers, "use multiplier 8 for numel <= 500 and 10 for numel <= 10");
  app.add_option("--suspicious-ratio", parsed.suspicious_ratio,
                 "an output the rule passes is suspicious when its RMSE to fp64 is at least this many times eager's "
                 "(eager's floored at its dtype's rounding); 0: never")
      ->default_val(kDefaultSuspiciousRatio)
      ->check(CLI::NonNegativeNumber);
  app.add_option("--node-ratio", parsed.node_ratio,
                 "node verdict: a node whose compiled local error (the exploded compile, fp64-exact inputs) is at least this many "
                 "times eager's local error makes the run at least suspicious, whatever the outputs say; 0: off (docs/verdicts.md)")
      ->default_val(kDefaultNodeRatio)
      ->check(CLI::NonNegativeNumber);
  app.add_option("--node-fail-ratio", parsed.node_fail_ratio,
                 "node verdict: such a node at least this many times eager's local error makes the run fail; 0: never on node "
                 "evidence alone")
      ->default_val(kDefaultNodeFailRatio)
      ->check(CLI::NonNegativeNumber);
}

void RuleOptions::add_exit_code_to(CLI::App& app) {
  app.add_flag("--fail-on-suspicious", fail_on_suspicious,
               "exit 1 when an output is suspicious, as when one fails (default: suspicious exits 0)");
}

ToleranceRule RuleOptions::get() const {
  ToleranceRule r = parsed;
  const ToleranceRule kind = parse_rule(rule);
  r.kind = kind.kind;
  r.max_ulp = kind.max_ulp;
  r.min_cosine = kind.min_cosine;
  return r;
}

BoundInputs InputOptions::bind(const Program& program) const {
  std::optional<UserInputs> given = load(program);
  if (!given && !program.sample_inputs)
    throw Error(Error::Kind::BadInputs,
                program.sample_inputs_problem.empty()
                    ? fmt::format("{} has no sample inputs: pass INPUTS or --random-inputs", program.path)
                    : fmt::format("{}: its sample inputs are unusable ({}): pass INPUTS or --random-inputs", program.path,
                                  program.sample_inputs_problem));
  return bind_inputs(program, given ? *given : *program.sample_inputs);
}

void CompilerOptions::apply_to(DiffOptions& options, const Program& program, const GraphOptions& graph,
                               const InputOptions& inputs) const {
  options.compiled = compiled;
  options.backend = backend;
  options.backend.device = !device.empty() ? device : default_device(program);
  options.reference_device = reference_device;
  options.gpu_memory = gpu_memory;
  options.backend.seed = inputs.seed;
  options.backend.op_libraries = graph.libraries;
}

void SearchOptions::add_to(CLI::App& app) {
  app.add_flag("!--no-exploded", exploded, "skip the exploded compile (every op on its own: the compiled local error column)");
  app.add_flag("!--no-kernel-map", kernel_map,
               "do not observe the compiled code's buffers (the kernel table: each kernel's buffers judged, from the verdict's own run)");
  app.add_flag("!--no-localize", localize.enabled, "do not bisect the graph when an output diverges");
  app.add_flag("--localize-suspicious", localize_suspicious, "bisect the graph when an output is suspicious, as when one fails");
  app.add_option("--bisect", bisect, "search of the localization: binary (about 2 log2 m + 4 compiles) or linear")
      ->check(CLI::IsMember({"binary", "linear"}))
      ->default_val("binary");
  app.add_option("--max-compiles", localize.max_compiles, "localization stops (inconclusive) past this many compiles")->default_val(64);
  app.add_option("--repeats", localize.repeats, "runs of each boundary probe; answers that differ are reported as flaky")
      ->default_val(2)
      ->check(CLI::Range(1, 100));
  app.add_option("--top", top, "how many nodes the ranking of introduced error lists")->default_val(10);
  app.add_flag("--workaround", workaround.enabled,
               "when an output fails: the smallest set of nodes to leave eager for the compiled graph to pass, and the lines "
               "(torch.compiler.disable) that do it, verified by one more compile (docs/workaround.md)");
  app.add_option("--workaround-max-compiles", workaround.max_compiles, "the eager set search stops past this many compiles")
      ->default_val(WorkaroundOptions{}.max_compiles)
      ->check(CLI::Range(1, 10000));
}

DiffOptions diff_options(const Program& program, const GraphOptions& graph, const InputOptions& inputs,
                         const CompilerOptions& compiler, const RuleOptions& rule, const SearchOptions& search) {
  DiffOptions options;
  compiler.apply_to(options, program, graph, inputs);
  options.rule = rule.get();
  options.fail_on_suspicious = rule.fail_on_suspicious;
  options.localize_suspicious = search.localize_suspicious;
  options.exploded = search.exploded;
  options.kernel_map = search.kernel_map;
  options.localize = search.localize;
  options.workaround = search.workaround;
  options.localize.search = search.bisect == "linear" ? LocalizeOptions::Search::Linear : LocalizeOptions::Search::Binary;
  options.top = search.top;
  options.max_memory = inputs.max_memory;
  return options;
}

void cap_own_memory(int64_t max_memory) {
#if defined(__SANITIZE_ADDRESS__)
  return;  // ASan maps its own shadow and quarantine: a data cap breaks the sanitizer, not the run
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return;
#endif
#endif
  const int64_t limit = memory_limit_for(max_memory);
  if (limit <= 0) return;
  std::ifstream status("/proc/self/status");
  int64_t held_kib = 0;
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmData:", 0) == 0) held_kib = std::strtoll(line.c_str() + 7, nullptr, 10);
  const rlim_t cap = static_cast<rlim_t>(held_kib * 1024 + limit);
  rlimit current{};
  if (getrlimit(RLIMIT_DATA, &current) == 0 && current.rlim_cur != RLIM_INFINITY && current.rlim_cur < cap) return;  // tighter already
  const rlimit wanted{cap, current.rlim_max == RLIM_INFINITY || current.rlim_max >= cap ? cap : current.rlim_max};
  setrlimit(RLIMIT_DATA, &wanted);
}

int report_compile_failures(const DiffResult& result) {
  if (!result.compiled_failed) return 0;
  for (const CompileRecord& c : result.compiles)
    if (!c.ok) std::cerr << fmt::format("pt2diff: the {} compile failed ({}): {}\n", c.what, failure_kind_name(c.failure), c.message);
  return 4;
}

std::optional<UserInputs> InputOptions::load(const Program& program) const {
  // Drawn inputs take the graph's declared shapes: a [2^20, 2^20] input is refused, not allocated.
  if (random) check_memory(program.ir.graph, /*exploded=*/false, max_memory);
  if (random) return random_inputs(program, seed);
  if (!inputs.empty()) return load_inputs(inputs);
  return std::nullopt;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  if (!(f << bytes)) throw Error(Error::Kind::Usage, fmt::format("cannot write {}", path));
}

}  // namespace pt2diff::cli
