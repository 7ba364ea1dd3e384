// engine/worker/worker_process.h — a child process spoken to in lines, with deadlines: the transport
// under the worker protocol. A child that crashes or hangs never takes the engine with it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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
  /// this process's environment in the child's. `nice` > 0: the child's CPU niceness (inherited by what it starts).
  WorkerProcess(const std::vector<std::string>& argv, const std::string& stderr_path, int64_t memory_limit = 0,
                const std::vector<std::string>& environment = {}, int nice = 0);
  /// A worker another process started for us (a worker server, engine/worker/worker_server.h): `pid` leads
  /// its own process group; `to_child`/`from_child` are our ends of its stdin and stdout; the server writes
  /// "exit STATUS" on `control` when it has reaped the worker. Takes ownership of the three descriptors.
  static std::unique_ptr<WorkerProcess> adopt(pid_t pid, int to_child, int from_child, int control);
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
  /// Whether a worker server started this worker (adopt) rather than this process.
  bool served() const { return control_ >= 0; }

 private:
  WorkerProcess() = default;
  /// Served: waits up to `seconds` for the server's "exit STATUS" line; true once the status is known.
  bool await_exit_report(double seconds);

  pid_t pid_ = -1;
  int to_child_ = -1;    ///< our end of the child's stdin
  int from_child_ = -1;  ///< our end of the child's stdout
  std::string buffer_;   ///< bytes read past the last returned line
  int status_ = 0;
  bool reaped_ = false;
  bool lost_status_ = false;  ///< served: the server ended before it reported the worker's status
  int control_ = -1;     ///< served: the connection the server reports the worker's end on
};

/// This process's environment with `overrides` ("NAME=VALUE") replacing or added to it.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides);

}  // namespace pt2diff
