// graphs/failure.cpp — the stable names of failure kinds (pt2diff/failure.h).
#include "pt2diff/failure.h"

namespace pt2diff {

const char* failure_kind_name(FailureKind kind) {
  switch (kind) {
    case FailureKind::CompileFailed: return "compile_failed";
    case FailureKind::RunFailed: return "run_failed";
    case FailureKind::WorkerDied: return "worker_died";
    case FailureKind::TimedOut: return "timed_out";
    case FailureKind::Unusable: return "unusable";
    case FailureKind::OutOfMemory: return "out_of_memory";
  }
  return "unknown";
}

}  // namespace pt2diff
