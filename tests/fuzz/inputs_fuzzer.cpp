// tests/fuzz/inputs_fuzzer.cpp — libFuzzer target: any bytes as a torch.save inputs file, read and
// bound to fixtures/mlp.pt2 (inputs: x float32[4, 32]). The reader must end in a pt2diff::Error or
// bound inputs; a crash, a sanitizer report or another exception is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "engine/load/torch_save.h"
#include "pt2diff/error.h"
#include "pt2diff/inputs.h"
#include "pt2diff/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pt2diff::Program program = pt2diff::load_program(std::string(PT2DIFF_FIXTURES) + "/mlp.pt2");
  try {
    const pt2diff::UserInputs inputs =
        pt2diff::user_inputs_from_torch_save(std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
    pt2diff::bind_inputs(program, inputs);
  } catch (const pt2diff::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "inputs_fuzzer: not a pt2diff::Error: %s\n", e.what());
    std::abort();
  }
  return 0;
}
