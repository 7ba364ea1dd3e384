// pt2diff/failure.h — how a compiler can fail, as data (no torch): backends throw BackendFailure with
// one of these kinds, results carry it (CompileRecord, Probe), and only reports turn it into text.
#pragma once

#include <optional>

namespace pt2diff {

enum class FailureKind {
  CompileFailed,  ///< the compiler rejected or crashed on the region (its message is kept)
  RunFailed,      ///< the compiled code raised while running
  WorkerDied,     ///< the worker process exited (twice: it is restarted once)
  TimedOut,       ///< no answer within BackendOptions::timeout_seconds (the worker is killed)
  Unusable,       ///< the backend cannot run here at all (no such package, wrong device or ISA, ...)
  OutOfMemory,    ///< the compiler or the compiled code went past the worker's memory limit (--max-memory)
};

/// Stable name for reports: "compile_failed", "run_failed", "worker_died", "timed_out", "unusable",
/// "out_of_memory".
const char* failure_kind_name(FailureKind kind);

/// The same for an optional kind: "" when there was no failure.
inline const char* failure_kind_name(const std::optional<FailureKind>& kind) { return kind ? failure_kind_name(*kind) : ""; }

/// The compiler is gone for this run: it hung, died twice, cannot run here, or ran out of memory (the next
/// compile would ask as much again). Nothing more is asked of it.
inline bool loses_compiler(FailureKind kind) {
  return kind == FailureKind::TimedOut || kind == FailureKind::WorkerDied || kind == FailureKind::Unusable ||
         kind == FailureKind::OutOfMemory;
}

}  // namespace pt2diff
