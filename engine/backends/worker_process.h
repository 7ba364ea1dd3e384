// engine/backends/worker_process.h — a child process spoken to in lines, with deadlines: the transport
// under the worker protocol. A child that crashes or hangs never takes the engine with it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pt2diff {

class WorkerProcess {
 public:
  /// Starts `argv` (argv[0] looked up on PATH) in its own process group, its stdin and stdout
  /// connected to this process and its stderr appended to `stderr_path`; `memory_limit` > 0 caps the
  /// bytes it (and every process it starts) may allocate (RLIMIT_DATA: an allocation past it fails in
  /// the child, where the kernel's OOM killer could otherwise take any process). Throws
  /// std::runtime_error when it cannot be started. `environment`: "NAME=VALUE" entries that replace or add to
  /// this process's environment in the child's.
  WorkerProcess(const std::vector<std::string>& argv, const std::string& stderr_path, int64_t memory_limit = 0,
                const std::vector<std::string>& environment = {});
  /// Kills the whole process group (the worker and compilers it started) if still running.
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  /// Sends one line (a newline is added). False when the child no longer reads (it died).
  bool write_line(const std::string& line);

  enum class Read { Line, Closed, TimedOut };
  /// Waits up to `timeout_seconds` for one line; calls `tick(elapsed)` about every 0.25 s meanwhile.
  Read read_line(std::string& line, double timeout_seconds, const std::function<void(double)>& tick);

  /// SIGKILL to the process group, then reaps the child.
  void kill();
  /// "exited with status 1", "killed by signal 11 (Segmentation fault)", or "running".
  std::string exit_description();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;    ///< our end of the child's stdin
  int from_child_ = -1;  ///< our end of the child's stdout
  std::string buffer_;   ///< bytes read past the last returned line
  int status_ = 0;
  bool reaped_ = false;
};

}  // namespace pt2diff
