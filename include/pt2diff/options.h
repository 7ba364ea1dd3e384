// pt2diff/options.h — what a diff run is asked to do, as plain data (no torch): the compiled side and
// its settings, localization, the verdict rule; and the same options written back as CLI flags.
//
//   pt2diff::DiffOptions o;
//   o.compiled = "inductor";
//   o.backend.inductor_config = {"emulate_precision_casts=True"};
//   o.rule = pt2diff::parse_rule("ulp:4");
//   std::cout << pt2diff::shell_line(pt2diff::to_flags(o)) << "\n";   // --compiled inductor --inductor-config ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pt2diff/localize.h"
#include "pt2diff/compiler_search.h"
#include "pt2diff/workaround.h"
#include "pt2diff/verdict.h"

namespace pt2diff {

/// Called about 4 times a second while the engine waits on a compiler: what it is doing and for how
/// long it has waited. The CLI draws a progress line from it; a library user may log or ignore it.
using WaitCallback = std::function<void(const std::string& activity, double elapsed_seconds)>;

/// One rank of the process group a compiled side joins (`pt2diff dist`, docs/distributed.md): the Inductor worker
/// calls torch.distributed.init_process_group(backend, init_method, rank, world_size) when it loads the archive,
/// then creates `groups` in order, so that the graph's collectives run for real between the ranks' workers.
struct ProcessGroupSpec {
  std::string backend = "gloo";  ///< "gloo" (CPU), "nccl" (GPUs)
  std::string init_method;       ///< "tcp://127.0.0.1:PORT"
  int rank = 0;
  int world_size = 1;
  double timeout_seconds = 300;  ///< a collective that waits longer fails (a rank that died or desynced)
  struct Group {
    std::string name;        ///< the name the graph's collectives use ("1")
    std::vector<int> ranks;  ///< global ranks, in group order
  };
  std::vector<Group> groups;  ///< the groups besides WORLD ("0"), in the order the program made them
};

struct BackendOptions {
  /// "cpu" or "cuda[:N]": the device the compiler targets (inductor, external) and the one the
  /// engine's eager (native), local and region runs execute on (diff() also places the fp64 run:
  /// DiffOptions::reference_device).
  std::string device = "cpu";
  /// Inductor config overrides, "key=value" (value as a Python literal): "emulate_precision_casts=True".
  std::vector<std::string> inductor_config;
  /// How long one request to a worker may take (compile, run) before it is killed and reported.
  double timeout_seconds = 900;
  /// Python for the Inductor worker. Empty: $PT2DIFF_PYTHON, else the venv pt2diff was built with.
  std::string python;
  /// Inductor's cache (FX graph and kernel caches). Empty: $PT2DIFF_INDUCTOR_CACHE, else
  /// ~/.cache/pt2diff/inductor: kept between runs, so a second run of the same graph compiles fast.
  std::string inductor_cache_dir;
  /// Seeds the backend's random generator (torch.manual_seed) before every run; diff() seeds the
  /// engine's runs with the same value (Interpreter::set_seed), so with Inductor's
  /// fallback_random=True random ops draw eager's stream. nullopt: generators are left alone.
  std::optional<uint64_t> seed = 0;
  /// Custom-op libraries the worker loads (torch.ops.load_library) before the archive, as the engine
  /// does with load_op_library().
  std::vector<std::string> op_libraries;
  /// torch.set_float32_matmul_precision in the worker, as the user's program sets it: "highest",
  /// "high" (TF32 matmuls on CUDA), "medium". Empty: torch's default (highest).
  std::string matmul_precision;
  /// TF32 off in the worker for matmuls and cuDNN convolutions alike (torch.backends.cuda.matmul and
  /// torch.backends.cudnn .allow_tf32 = False); cuDNN's default is on. Only CUDA has TF32.
  bool no_tf32 = false;
  /// Compile every size as the inputs give it (torch.compile's dynamic=False) even where the archive exported a dim
  /// dynamic; false: those dims compile symbolic, as torch.compile compiles dims marked dynamic and AOTInductor
  /// compiles an export's (docs/dynamic-shapes.md).
  bool static_shapes = false;
  /// Record the compiler's decisions in each compile and turn those the filter names off (compiler_search.h); a
  /// compile with it does not use the compiler's caches, which would skip the decisions. nullopt: plain compiles.
  std::optional<DecisionFilter> decisions;
  /// Bytes each worker process (and the compilers it starts) may allocate: its RLIMIT_DATA, so that an
  /// oversized case fails as FailureKind::OutOfMemory instead of waking the kernel's OOM killer. 0: no
  /// limit. diff() sets it from DiffOptions::max_memory: the bytes it names; for 0, the memory available
  /// when the run starts (at least 1 GiB either way); for a negative value, none. CPU workers only (not yet tried with CUDA's driver).
  int64_t memory_limit = 0;
  /// CPU niceness (1 to 19) of each worker process and of what it starts (its compile pool); 0: the engine's
  /// own. diff() sets 10 when its compiles overlap its own runs on a GPU (DiffOptions::overlap): those runs
  /// are one thread launching kernels and waiting on them, and beside two compile pools that fill every core
  /// they waited for a core at each step; the compiles keep every cycle the runs leave.
  int nice = 0;
  /// Join this rank of a process group (pt2diff dist); nullopt: a worker of its own, no group.
  std::optional<ProcessGroupSpec> process_group;
  WaitCallback on_wait;
};

struct DiffOptions {
  /// The compiled side, a make_backend() spec: "inductor" (default), "eager" (the noise floor: every
  /// verdict passes), "aoti:PACKAGE.pt2", "external:COMMAND", "fault:NODE:KIND".
  std::string compiled = "inductor";
  /// Device, Inductor config, timeout, worker Python, cache, progress callback.
  BackendOptions backend;
  /// Also compile every node as an independent op (one compile) for the compiled local error column.
  bool exploded = true;
  /// Observe every buffer the whole graph's compiled code writes and judge it (kernels.h), in the
  /// compile and run that give the verdict (--no-kernel-map turns it off).
  bool kernel_map = true;
  /// When an output diverges: bisect the graph to the op or window that causes it (localize.h).
  LocalizeOptions localize;
  /// When localization names a culprit, write it here as a standalone repro (localize.h: Repro).
  std::string repro_dir;
  /// When an output fails: the smallest set of nodes to leave eager, and the lines that do it (workaround.h).
  WorkaroundOptions workaround;
  /// When only the whole compile diverges: search the compiler's decisions (compiler_search.h).
  CompilerSearchOptions compiler_search;
  /// The rule, with its suspicious ratio (ToleranceRule::suspicious_ratio: --suspicious-ratio).
  ToleranceRule rule;
  /// Suspicious outputs count as failing (--fail-on-suspicious): exit code 1, testing.h assertions fail.
  bool fail_on_suspicious = false;
  /// Localize a suspicious output as a failing one (--localize-suspicious): probes and exploded suspects
  /// then count suspicious values as failing.
  bool localize_suspicious = false;
  /// How many nodes the ranking of introduced error lists.
  size_t top = 10;
  /// Keep every node's values (DiffResult::values, values.h) for re-judging later (sweeps): memory grows with
  /// the graph, so off by default.
  bool keep_values = false;
  /// Refuse a run whose runs would hold more than this many bytes (an estimate from the graph's shapes,
  /// made before anything is allocated): 0, the memory available when it starts; negative, no limit.
  int64_t max_memory = 0;
  /// Where the fp64 reference runs when `backend.device` is a GPU: "auto" (the GPU when the runs'
  /// estimate fits in `gpu_memory`, else the CPU: DiffResult::devices says which and why), "cpu", "cuda".
  std::string reference_device = "auto";
  /// The GPU memory the engine's runs may hold, in bytes: 0, what the GPU has free when the run starts;
  /// negative, no limit. A cap makes "auto" put the fp64 run on the CPU sooner.
  int64_t gpu_memory = 0;
  /// Compile while the engine computes (diff(), sweep()): the whole graph's compile in a second thread beside the
  /// eager and fp64 runs, and the exploded compile on a second worker beside the whole graph's. "on", "off", or
  /// "auto": on where the machine has 4 or more CPUs or the compiler targets a GPU, off on fewer CPUs, where the
  /// compiles would take the cores the runs need. The result is the same either way (but for its timings);
  /// BackendOptions::on_wait is then called from the compile's thread, never from two at once. Only with the
  /// backend diff() makes itself, a compiler in a worker process, and a graph that mutates none of its inputs.
  std::string overlap = "auto";
};

/// The flags of `pt2diff GRAPH INPUTS` that run the CLI with `options` again: every option that differs
/// from the CLI's default, spelled as the CLI reads it ({"--compiled", "fault:mm#1:bf16", "--tol",
/// "1e-06"}). `default_device` is what --device would default to (the graph's export device). Where
/// results go (--json, --html, --repro, --inductor-cache) and callbacks are left out: they change no
/// verdict. A repro command, or a test harness's log, is these flags after GRAPH INPUTS.
std::vector<std::string> to_flags(const DiffOptions& options, const std::string& default_device = "cpu");
/// Words as one line a POSIX shell reads back as the same words (single quotes where needed).
std::string shell_line(const std::vector<std::string>& words);

}  // namespace pt2diff
