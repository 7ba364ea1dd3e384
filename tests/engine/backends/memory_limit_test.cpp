// The memory limit (issue 34): the worker starts under RLIMIT_DATA = BackendOptions::memory_limit, and the
// CLI caps its own allocations (cap_own_memory), so an oversized case fails with an allocation error instead
// of waking the kernel's OOM killer. The end-to-end check (a worker allocating past --max-memory: exit 4,
// out_of_memory, one line) is tests/engine/backends/test_memory_hog.py.
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "engine/worker/worker_process.h"
#include "engine/cli/command.h"
#include "graphs/memory_estimate.h"

namespace pt2diff {
namespace {

TEST(MemoryLimit, TheWorkerStartsUnderTheCap) {
  WorkerProcess child({"sh", "-c", "ulimit -d"}, "/dev/null", 256LL << 20);
  std::string line;
  ASSERT_EQ(child.read_line(line, 30, [](double) {}), WorkerProcess::Read::Line);
  EXPECT_EQ(line, "262144");  // KiB
  WorkerProcess unlimited({"sh", "-c", "ulimit -d"}, "/dev/null");
  ASSERT_EQ(unlimited.read_line(line, 30, [](double) {}), WorkerProcess::Read::Line);
  EXPECT_EQ(line, "unlimited");
}

// BackendOptions::nice: the worker (and what it starts) at a lower CPU priority than the engine.
TEST(MemoryLimit, TheWorkerStartsAtItsNiceness) {
  // /proc/PID/stat's 19th field is the niceness (the shell's name, "sh", has no space to shift it)
  WorkerProcess niced({"sh", "-c", "cut -d' ' -f19 /proc/$$/stat"}, "/dev/null", 0, {}, 10);
  std::string line;
  ASSERT_EQ(niced.read_line(line, 30, [](double) {}), WorkerProcess::Read::Line);
  EXPECT_EQ(std::stoi(line), getpriority(PRIO_PROCESS, 0) + 10 > 19 ? 19 : getpriority(PRIO_PROCESS, 0) + 10);
  WorkerProcess plain({"sh", "-c", "cut -d' ' -f19 /proc/$$/stat"}, "/dev/null");
  ASSERT_EQ(plain.read_line(line, 30, [](double) {}), WorkerProcess::Read::Line);
  EXPECT_EQ(std::stoi(line), getpriority(PRIO_PROCESS, 0));
}

TEST(MemoryLimit, MaxMemoryNamesTheLimit) {
  EXPECT_EQ(memory_limit_for(1LL << 30), 1LL << 30);
  EXPECT_EQ(memory_limit_for(-1), 0);  // --max-memory none
  const auto available = available_memory();
  if (available) {
    EXPECT_GT(memory_limit_for(0), 0);  // the memory available now
  }
}

TEST(MemoryLimit, TheCliCapTurnsAnOversizedAllocationIntoAnError) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "no cap under AddressSanitizer";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "no cap under AddressSanitizer";
#endif
#endif
  // In a child: the cap stays there.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    cli::cap_own_memory(64LL << 20);  // raised to the 1 GiB floor
    try {
      at::Tensor t = at::empty({1LL << 30});  // 4 GiB of float32, past it
      std::_Exit(1);
    } catch (const c10::Error& e) {
      const std::string what = e.what();
      std::_Exit(what.find("not enough memory") != std::string::npos || what.find("can't allocate memory") != std::string::npos ? 0 : 2);
    } catch (...) {
      std::_Exit(3);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed: the cap did not hold";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the allocation succeeded; 2: another error; 3: not a c10::Error";
}

}  // namespace
}  // namespace pt2diff
