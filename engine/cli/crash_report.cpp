// engine/cli/crash_report.cpp — a crash of the pt2diff process (never expected: compilers run in
// their own processes) ends with one line saying so and a backtrace to report, not a bare
// "Segmentation fault". Only async-signal-safe calls in the handler; the signal is re-raised so the
// exit status still says how the process died.
#include <csignal>
#include <cstring>
#include <execinfo.h>
#include <ucontext.h>
#include <unistd.h>

#include "engine/cli/command.h"

namespace pt2diff::cli {

namespace {

void write_all(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

void on_crash(int sig, siginfo_t*, void* context) {
  const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL" : sig == SIGFPE ? "SIGFPE" : "SIGABRT";
  write_all("pt2diff: internal error: the pt2diff process crashed with ");
  write_all(name);
  write_all(" (a bug in pt2diff or in the libtorch it was built against): please report it with the backtrace below\n");
#if defined(__x86_64__) && defined(__linux__)
  // A call through a null (or wild) function pointer leaves the unwinder nothing to start from: name the
  // faulting address and the caller whose return address the call pushed.
  if (context) {
    const auto* uc = static_cast<const ucontext_t*>(context);
    void* at[2] = {reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]),
                   *reinterpret_cast<void* const*>(uc->uc_mcontext.gregs[REG_RSP])};
    write_all("faulting address, then the return address on the stack:\n");
    ::backtrace_symbols_fd(at, 2, STDERR_FILENO);
  }
#endif
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_crash_report() {
#ifdef __SANITIZE_ADDRESS__
  return;  // AddressSanitizer's own report is better
#endif
  // backtrace() loads libgcc on first use, which is not async-signal-safe: do it now.
  void* warm[1];
  ::backtrace(warm, 1);
  struct sigaction action {};
  action.sa_sigaction = on_crash;
  action.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::sigaction(sig, &action, nullptr);
}

}  // namespace pt2diff::cli
