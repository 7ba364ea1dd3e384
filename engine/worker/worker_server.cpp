// engine/worker/worker_server.cpp — the engine's side of the worker server (python/pt2diff_worker/server.py):
// find or start the server for this worker's key, hand it the worker's sockets, adopt the worker it forks.
#include "engine/worker/worker_server.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pt2diff {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// A line from `fd` within `seconds`; empty on timeout or end of input.
std::string read_reply(int fd, double seconds) {
  std::string data;
  const auto start = std::chrono::steady_clock::now();
  while (data.find('\n') == std::string::npos) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= seconds) return "";
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>((seconds - elapsed) * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return "";
    char chunk[256];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    data.append(chunk, static_cast<size_t>(n));
  }
  return data.substr(0, data.find('\n'));
}

/// FNV-1a, 64 bits: the server's key need not resist an attacker (the directory is private), only collisions.
uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

/// The directory of this user's server sockets, created private; empty when it is not private to this user.
fs::path socket_directory() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  fs::path base = runtime && *runtime && fs::is_directory(runtime) ? fs::path(runtime) : fs::path("/tmp");
  fs::path dir = base / fmt::format("pt2diff-workers-{}", getuid());
  ::mkdir(dir.c_str(), 0700);
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0) return {};
  return dir;
}

/// What a process inherits from its parent beyond the environment and the directory, and a worker started by the
/// engine would have had from it: resource limits (a test may run pt2diff under a lower RLIMIT_DATA), umask, CPU
/// affinity (torch sizes its thread pools by it) and nice value. Part of the key: a server serves only engines
/// that share it.
std::string inherited_state() {
  std::string state;
  for (int resource : {RLIMIT_AS, RLIMIT_CORE, RLIMIT_CPU, RLIMIT_DATA, RLIMIT_FSIZE, RLIMIT_MEMLOCK, RLIMIT_NOFILE,
                       RLIMIT_NPROC, RLIMIT_STACK}) {
    rlimit limit{};
    getrlimit(resource, &limit);
    // RLIMIT_DATA's soft limit is the request's (the CLI sets its own from the memory available when it starts).
    if (resource == RLIMIT_DATA) limit.rlim_cur = 0;
    state += fmt::format("rlimit{}={},{}\n", resource, static_cast<uint64_t>(limit.rlim_cur), static_cast<uint64_t>(limit.rlim_max));
  }
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0 || line.rfind("Cpus_allowed_list:", 0) == 0) state += line + "\n";
  errno = 0;
  state += fmt::format("nice={}\n", getpriority(PRIO_PROCESS, 0));
  return state;
}

enum class Asked { Served, NoServer, Stale, Failed };

/// Hands the server at `socket_path` one request; on "pid N" the worker is in `process`.
Asked ask(const fs::path& socket_path, const std::string& request, const std::string& stderr_path,
          std::unique_ptr<WorkerProcess>& process) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.string().size() >= sizeof address.sun_path) return Asked::Failed;
  std::strcpy(address.sun_path, socket_path.c_str());
  const int control = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (control < 0) return Asked::Failed;
  if (::connect(control, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const int e = errno;
    ::close(control);
    return e == ENOENT || e == ECONNREFUSED ? Asked::NoServer : Asked::Failed;
  }
  int in[2], out[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
    ::close(control);
    return Asked::Failed;
  }
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) != 0) {
    for (int fd : {control, in[0], in[1]}) ::close(fd);
    return Asked::Failed;
  }
  const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  auto give_up = [&](Asked how) {
    for (int fd : {control, in[0], in[1], out[0], out[1], err})
      if (fd >= 0) ::close(fd);
    return how;
  };
  if (err < 0) return give_up(Asked::Failed);
  // The request's first byte carries the worker's three descriptors; the rest of the line follows.
  const int fds[3] = {in[1], out[1], err};
  char control_buffer[CMSG_SPACE(sizeof fds)] = {};
  iovec io{const_cast<char*>(request.data()), request.size()};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control_buffer;
  message.msg_controllen = sizeof control_buffer;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(header), fds, sizeof fds);
  ssize_t sent = sendmsg(control, &message, MSG_NOSIGNAL);
  if (sent <= 0) return give_up(Asked::NoServer);  // a server that was ending as we connected
  while (static_cast<size_t>(sent) < request.size()) {
    const ssize_t n = send(control, request.data() + sent, request.size() - static_cast<size_t>(sent), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return give_up(Asked::Failed);
    sent += n;
  }
  for (int* fd : {&in[1], &out[1]}) {
    ::close(*fd);
    *fd = -1;
  }
  ::close(err);
  const std::string reply = read_reply(control, 30);
  if (reply.rfind("pid ", 0) == 0) {
    const pid_t pid = static_cast<pid_t>(std::atol(reply.c_str() + 4));
    if (pid > 0) {
      process = WorkerProcess::adopt(pid, in[0], out[0], control);
      return Asked::Served;
    }
  }
  for (int fd : {control, in[0], out[0]}) ::close(fd);
  if (reply == "stale") return Asked::Stale;
  return reply.empty() ? Asked::NoServer : Asked::Failed;
}

/// Starts a server at `socket_path` (detached: its own session, no descriptor of ours but its ready pipe) and
/// waits for it to listen; false when it ended first or did not listen within `seconds`.
bool launch(const std::string& python, const std::string& launcher, const fs::path& socket_path, const fs::path& log,
            std::vector<std::string> environment, double seconds) {
  std::vector<std::string> argv = {python, launcher, "--serve-workers", socket_path.string(), "--ready-fd", "3"};
  if (const char* idle = std::getenv("PT2DIFF_WORKER_SERVER_IDLE"); idle && *idle) {
    argv.push_back("--idle");
    argv.push_back(idle);
  }
  std::vector<char*> args, envp;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  int ready[2] = {-1, -1};
  if (null < 0 || err < 0 || pipe2(ready, O_CLOEXEC) != 0) {
    for (int fd : {null, err, ready[0], ready[1]})
      if (fd >= 0) ::close(fd);
    return false;
  }
  const pid_t first = fork();
  if (first == 0) {
    setsid();
    if (fork() != 0) _exit(0);  // the server is nobody's child here: the engine never waits for it
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    if (ready[1] != 3) dup2(ready[1], 3);
    fcntl(3, F_SETFD, 0);
    close_range(4, ~0U, 0);
    execve(args[0], args.data(), envp.data());
    // The server's log is its stderr: say why it never started there, or a failing engine shows no reason (a wrapper
    // Python that cannot be executed: ETXTBSY while another process still holds it open for writing, ENOEXEC, ...).
    // No allocation between fork and exit (the engine may have threads): plain writes of static text.
    const char* reason = std::strerror(errno);
    for (const char* piece : {"pt2diff: cannot start the worker server ", static_cast<const char*>(args[0]), ": ", reason, "\n"})
      if (::write(STDERR_FILENO, piece, std::strlen(piece)) < 0) break;
    _exit(127);
  }
  ::close(ready[1]);
  ::close(null);
  ::close(err);
  if (first > 0)
    while (waitpid(first, nullptr, 0) < 0 && errno == EINTR) {
    }
  const std::string line = first > 0 ? read_reply(ready[0], seconds) : "";
  ::close(ready[0]);
  return line == "ready";
}

}  // namespace

bool worker_server_enabled() {
  const char* v = std::getenv("PT2DIFF_WORKER_SERVER");
  return v && std::string(v) == "1";
}

bool runs_python_script(const std::vector<std::string>& argv) {
  return argv.size() >= 2 && argv[0].find('/') != std::string::npos && argv[1].size() > 3 &&
         argv[1].compare(argv[1].size() - 3, 3, ".py") == 0;
}

std::unique_ptr<WorkerProcess> start_served_worker(const std::vector<std::string>& argv, const std::string& launcher,
                                                   const std::string& stderr_path, int64_t memory_limit,
                                                   const std::vector<std::string>& environment) {
  if (launcher.empty() || !runs_python_script(argv)) return nullptr;
  const fs::path dir = socket_directory();
  if (dir.empty()) return nullptr;
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (ec) return nullptr;
  std::vector<std::string> env = environment_with(environment);
  std::vector<std::string> keyed;
  json variables = json::object();
  for (const std::string& entry : env) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    variables[entry.substr(0, eq)] = entry.substr(eq + 1);
    // Not in the key: TMPDIR (the engine's scratch directory for each worker), a shell's bookkeeping, and pt2diff's
    // own variables (PT2DIFF_*: a planted compiler's switches, PT2DIFF_WORKER...), which nothing the server imports
    // reads (the worker's script reads them, in the request's environment); the directory itself is in the key.
    const std::string name = entry.substr(0, eq);
    if (name != "TMPDIR" && name != "PWD" && name != "OLDPWD" && name != "SHLVL" && name != "_" && name.rfind("PT2DIFF_", 0) != 0)
      keyed.push_back(entry);
  }
  std::sort(keyed.begin(), keyed.end());
  uint64_t h = fnv1a(fmt::format("{}\n{}\n{}\n{}\n{}", getuid(), argv[0], launcher, cwd.string(), inherited_state()));
  for (const std::string& entry : keyed) h = fnv1a(entry + '\0', h);
  const std::string key = fmt::format("{:016x}", h);
  const fs::path socket_path = dir / (key + ".sock");
  // The worker's RLIMIT_DATA: `memory_limit` (soft and hard) as WorkerProcess sets it, else this process's own.
  rlimit data{};
  getrlimit(RLIMIT_DATA, &data);
  const json limit = memory_limit > 0 ? json::array({memory_limit, memory_limit})
                                      : json::array({data.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(data.rlim_cur),
                                                     data.rlim_max == RLIM_INFINITY ? -1 : static_cast<int64_t>(data.rlim_max)});
  const std::string request =
      json{{"argv", argv}, {"env", variables}, {"cwd", cwd.string()}, {"rlimit_data", limit}}.dump() + "\n";

  std::unique_ptr<WorkerProcess> process;
  Asked asked = ask(socket_path, request, stderr_path, process);
  if (asked == Asked::Served) return process;
  if (asked == Asked::Failed) return nullptr;
  // No server, or a stale one: start one, one engine at a time per key (the others wait for it and use it).
  const int lock = ::open((dir / (key + ".lock")).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) return nullptr;
  while (flock(lock, LOCK_EX) != 0 && errno == EINTR) {
  }
  if (asked == Asked::Stale || (asked = ask(socket_path, request, stderr_path, process)) != Asked::Served) {
    const fs::path scratch = dir / (key + ".tmp");
    fs::create_directories(scratch, ec);
    std::vector<std::string> server_env;
    for (const std::string& entry : env)
      if (entry.rfind("TMPDIR=", 0) != 0) server_env.push_back(entry);
    server_env.push_back("TMPDIR=" + scratch.string());
    // The server tells what its Python (a wrapper script, maybe) changed on top of this environment by comparing:
    // its forked workers get those changes too (python/pt2diff_worker/server.py, launcher_changes).
    server_env.push_back("PT2DIFF_WORKER_SERVER_LAUNCH_ENV=" + variables.dump());
    if (launch(argv[0], launcher, socket_path, dir / (key + ".log"), server_env, 300))
      asked = ask(socket_path, request, stderr_path, process);
  }
  ::close(lock);
  return asked == Asked::Served ? std::move(process) : nullptr;
}

}  // namespace pt2diff
