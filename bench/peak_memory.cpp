// bench/peak_memory.cpp — peak resident memory of one fp64 run, with or without freeing values at
// their last use, printed as one JSON object. Run it twice as separate processes and compare
// (bench/run.sh does, for docs/performance.md):
//   build/bench/peak_memory free GRAPH INPUTS
//   build/bench/peak_memory keep GRAPH INPUTS
#include <sys/resource.h>

#include <cstring>
#include <iostream>

#include "pt2diff/advanced/interpreter.h"

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[1], "free") != 0 && std::strcmp(argv[1], "keep") != 0)) {
    std::cerr << "usage: peak_memory free|keep GRAPH INPUTS\n";
    return 2;
  }
  pt2diff::Program program = pt2diff::load_program(argv[2]);
  pt2diff::BoundInputs inputs = pt2diff::bind_inputs(program, pt2diff::load_inputs(argv[3]));
  pt2diff::Interpreter interpreter(program);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  pt2diff::RunOptions options;
  options.precision = pt2diff::Precision::Fp64;
  options.free_at_last_use = std::strcmp(argv[1], "free") == 0;
  interpreter.run(inputs, options);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  // One JSON object (bench/run.sh collects it): peak RSS in MiB, and how much of it the run added.
  std::cout << "{\"values\": \"" << argv[1] << "\", \"peak_rss_mib\": " << after.ru_maxrss / 1024
            << ", \"above_loaded_mib\": " << (after.ru_maxrss - before.ru_maxrss) / 1024
            << ", \"nodes\": " << program.ir.graph.nodes().size() << "}\n";
  return 0;
}
