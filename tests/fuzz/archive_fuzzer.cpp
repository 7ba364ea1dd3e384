// tests/fuzz/archive_fuzzer.cpp — libFuzzer target: any bytes as a .pt2 archive. The loader must end
// in a pt2diff::Error (one line) or a Program; anything else — a crash, a sanitizer report, another
// exception (libtorch's "internal error" of exit 3) — is a finding, kept as a regression test.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <unistd.h>

#include "pt2diff/error.h"
#include "pt2diff/inputs.h"
#include "pt2diff/program.h"

namespace {

/// One file per fuzzing process, rewritten for every input (the loader reads archives by path).
const std::string& scratch_path() {
  static const std::string path = "/dev/shm/pt2diff-archive-fuzz-" + std::to_string(::getpid()) + ".pt2";
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream f(scratch_path(), std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    pt2diff::Program program = pt2diff::load_program(scratch_path());
    if (program.sample_inputs) pt2diff::bind_inputs(program, *program.sample_inputs);  // the archive's own inputs
  } catch (const pt2diff::Error&) {
    // The expected outcome for damaged input: one clear line.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "archive_fuzzer: not a pt2diff::Error: %s\n", e.what());
    std::abort();
  }
  return 0;
}
