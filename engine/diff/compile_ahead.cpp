// engine/diff/compile_ahead.cpp — implements compile_ahead.h.
#include "engine/diff/compile_ahead.h"

#include <sched.h>

#include "engine/diff/stages.h"

namespace pt2diff {

namespace {

/// CPUs this process may run on (its affinity mask: a container's or taskset's limit, not the machine's).
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return CPU_COUNT(&set);
}

/// The exploded compile's second worker, made and started now in a thread (Backend::start_ahead): its Python's
/// imports and its load of the archive (on a GPU: the weights on the device) overlap the reference runs
/// instead of following them. Its progress lines wait until its start-up and the whole graph's compile are done.
void start_exploded_worker(RunState& s) {
  if (!s.exploded || s.program.ir.graph.nodes().empty()) return;
  DiffOptions options = s.options;
  if (s.options.backend.on_wait)
    options.backend.on_wait = [user = s.options.backend.on_wait, &s](const std::string& activity, double elapsed) {
      if (!s.ahead.graph_compiling && !s.ahead.exploded_starting) user(activity, elapsed);
    };
  s.ahead.exploded_backend = backend_for_run(s.program, options, s.step);
  s.ahead.exploded_starting = true;
  s.ahead.exploded_start = std::async(std::launch::async, [&s] {
    s.ahead.exploded_backend->start_ahead();
    s.ahead.exploded_starting = false;
  });
}

}  // namespace

bool overlaps(const RunState& s) {
  const std::string& mode = s.options.overlap;
  if (mode == "off" || !s.owns_backend || !s.backend.compiles_apart() || s.mutating) return false;
  if (mode == "on") return true;
  // On fewer CPUs the compiler (Python, then g++ or the Triton compile) and the engine's runs (ATen's threads)
  // would take turns on the same cores: nothing gained, and each slower.
  return usable_cpus() >= 4 || s.options.backend.device.rfind("cuda", 0) == 0;
}

bool start_graph_compile(RunState& s) {
  if (!overlaps(s)) return false;
  s.ahead.graph_compiling = true;
  s.ahead.graph = std::async(std::launch::async, [&s] {
    struct Done {  // also when the compile throws: the exploded compile's progress lines then show
      RunState& s;
      ~Done() { s.ahead.graph_compiling = false; }
    } done{s};
    compile_whole_graph(s);
  });
  start_exploded_worker(s);
  return false;
}

bool compile_exploded_ahead(RunState& s) {
  if (!s.ahead.graph.valid() || !s.ahead.exploded_backend) return false;
  s.ahead.exploded_start.get();  // started with the whole graph's compile (start_exploded_worker); start_ahead throws nothing
  ExplodedCompile x = exploded_request(s);
  x.outputs = compile_and_run(*s.ahead.exploded_backend, x.ops, x.inputs, "exploded", x.record);
  if (!x.record.compiles.empty()) x.record.compiles.back().worker_start_seconds = s.ahead.exploded_backend->startup_seconds();
  // Judged now, while the whole graph may still compile (on the H200 the 1B decoder's exploded compile ended
  // 5.2 s before it, then its judging took 2.6 s after the kernel table), rather than in compile_exploded.
  if (x.outputs) {
    try {
      x.judged = judge_exploded(s, x);
    } catch (...) {
      x.judge_error = std::current_exception();
    }
    if (!s.options.keep_values)  // the judged values hold what they keep: every op's compiled value can go
      for (c10::IValue& v : *x.outputs) v = c10::IValue();
  }
  s.ahead.exploded = std::move(x);
  return true;
}

}  // namespace pt2diff
