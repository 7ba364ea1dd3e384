// engine/worker/worker_process.cpp — fork/exec over Unix socket pairs. Sockets rather than pipes so
// that a write to a dead worker fails with EPIPE (MSG_NOSIGNAL) instead of killing us with SIGPIPE.
#include "engine/worker/worker_process.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pt2diff {

/// Built before the fork (the child may only call async-signal-safe functions).
std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& o : overrides) replaced = replaced || o.compare(0, name.size(), name) == 0;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv, const std::string& stderr_path, int64_t memory_limit,
                             const std::vector<std::string>& environment, int nice) {
  if (argv.empty()) throw std::runtime_error("no command to start");
  int in[2], out[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) != 0)
    throw std::runtime_error(fmt::format("socketpair: {}", std::strerror(errno)));
  int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (err < 0) throw std::runtime_error(fmt::format("cannot open {}: {}", stderr_path, std::strerror(errno)));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::vector<std::string> env_entries = environment_with(environment);
  std::vector<char*> envp;
  for (const std::string& e : env_entries) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // An exec failure is reported through this pipe (closed on a successful exec).
  int exec_error[2];
  if (pipe2(exec_error, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid_ == 0) {
    setpgid(0, 0);
    dup2(in[1], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    signal(SIGPIPE, SIG_DFL);
    if (memory_limit > 0) {
      const rlimit cap{static_cast<rlim_t>(memory_limit), static_cast<rlim_t>(memory_limit)};
      setrlimit(RLIMIT_DATA, &cap);
    }
    if (nice > 0) (void)!::nice(nice);  // relative to ours; best effort: a worker at the engine's priority still works
    execvpe(args[0], args.data(), envp.data());
    int e = errno;
    (void)!write(exec_error[1], &e, sizeof e);
    _exit(127);
  }
  setpgid(pid_, pid_);  // also from the parent: no race with kill() right after the fork
  ::close(in[1]);
  ::close(out[1]);
  ::close(err);
  ::close(exec_error[1]);
  to_child_ = in[0];
  from_child_ = out[0];
  int e = 0;
  ssize_t n = read(exec_error[0], &e, sizeof e);
  ::close(exec_error[0]);
  if (n == sizeof e) {
    kill();
    throw std::runtime_error(fmt::format("cannot run '{}': {}", argv[0], std::strerror(e)));
  }
}

std::unique_ptr<WorkerProcess> WorkerProcess::adopt(pid_t pid, int to_child, int from_child, int control) {
  std::unique_ptr<WorkerProcess> p(new WorkerProcess());
  p->pid_ = pid;
  p->to_child_ = to_child;
  p->from_child_ = from_child;
  p->control_ = control;
  return p;
}

WorkerProcess::~WorkerProcess() {
  kill();
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  if (control_ >= 0) ::close(control_);
}

bool WorkerProcess::await_exit_report(double seconds) {
  if (reaped_) return true;
  std::string report;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (auto nl = report.find('\n'); nl != std::string::npos) {
      if (report.rfind("exit ", 0) == 0) {
        status_ = std::atoi(report.c_str() + 5);
        reaped_ = true;
        return true;
      }
      report.erase(0, nl + 1);
      continue;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= seconds) return false;
    pollfd p{control_, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>((seconds - elapsed) * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char chunk[256];
    const ssize_t n = recv(control_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // the server ended without a report: the worker's status is lost with it
      reaped_ = true;
      lost_status_ = true;
      return true;
    }
    report.append(chunk, static_cast<size_t>(n));
  }
}

bool WorkerProcess::write_line(const std::string& line) {
  std::string data = line + "\n";
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = send(to_child_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

WorkerProcess::Read WorkerProcess::read_line(std::string& line, double timeout_seconds, const std::function<void(double)>& tick) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return Read::Line;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= timeout_seconds) return Read::TimedOut;
    pollfd p{from_child_, POLLIN, 0};
    const int wait_ms = static_cast<int>(std::min(250.0, (timeout_seconds - elapsed) * 1000) + 1);
    int ready = poll(&p, 1, wait_ms);
    if (ready < 0 && errno != EINTR) return Read::Closed;
    if (ready <= 0) {
      if (tick) tick(elapsed);
      continue;
    }
    char chunk[65536];
    ssize_t n = recv(from_child_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Read::Closed;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void WorkerProcess::kill() {
  if (pid_ <= 0 || reaped_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  if (served()) {  // the server reaps it and reports; no report within 10 s: its status is unknown
    if (!await_exit_report(10)) lost_status_ = true;
    reaped_ = true;
    return;
  }
  while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
}

std::string WorkerProcess::exit_description() {
  if (served() && !reaped_ && !await_exit_report(1)) return "running";
  if (lost_status_) return "ended; the worker server reported no status";
  if (!reaped_) {
    pid_t r = waitpid(pid_, &status_, WNOHANG);
    if (r == 0) {
      // Closed its output but still running: give it a moment to finish dying.
      for (int i = 0; i < 20 && r == 0; ++i) {
        usleep(50000);
        r = waitpid(pid_, &status_, WNOHANG);
      }
      if (r == 0) return "running";
    }
    reaped_ = true;
  }
  if (WIFEXITED(status_)) {
    const int code = WEXITSTATUS(status_);
    // A shell (external:COMMAND) reports a child killed by signal N as status 128 + N.
    if (code > 128 && code < 128 + 32)
      return fmt::format("exited with status {}: its command was killed by signal {} ({})", code, code - 128, strsignal(code - 128));
    return fmt::format("exited with status {}", code);
  }
  if (WIFSIGNALED(status_)) return fmt::format("killed by signal {} ({})", WTERMSIG(status_), strsignal(WTERMSIG(status_)));
  return "stopped";
}

}  // namespace pt2diff
