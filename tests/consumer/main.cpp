// tests/consumer/main.cpp — embeds pt2diff as an outside project would: load, bind, diff, report.
#include <pt2diff/pt2diff.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: consumer GRAPH INPUTS\n";
    return 2;
  }
  try {
    pt2diff::Program program = pt2diff::load_program(argv[1]);
    pt2diff::BoundInputs inputs = pt2diff::bind_inputs(program, pt2diff::load_inputs(argv[2]));
    pt2diff::DiffResult result = pt2diff::diff(program, inputs, {});
    const pt2diff::NodeError& worst = result.nodes.at(result.ranking.at(0));
    std::cout << "nodes " << result.nodes.size() << " worst " << worst.name << " " << worst.local_ulp << " ulp "
              << (result.diverged ? "diverged" : "agree") << "\n";
    return result.diverged ? 1 : 0;
  } catch (const pt2diff::Error& e) {
    std::cerr << "consumer: " << e.what() << "\n";
    return e.exit_code();
  }
}
