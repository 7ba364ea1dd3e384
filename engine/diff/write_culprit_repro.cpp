// engine/diff/write_culprit_repro.cpp — stage write_culprit_repro: a named culprit written as a standalone
// archive, its inputs and the command that reproduces the verdict (DiffOptions::repro_dir).
#include <filesystem>
#include <fstream>

#include "engine/diff/stages.h"
#include "engine/diff/repro_writer.h"

namespace pt2diff {

namespace {

/// The generated code of the kernel the op was found in, beside the repro: `<kernel>.cpp` for Inductor's
/// C++ kernels, `<kernel>.py` for Triton's. Nothing for an extern kernel (no generated code).
void write_kernel_code(RunState& s) {
  KernelTable& t = s.result.kernels;
  if (!t.inside || t.first_failing < 0) return;
  const KernelCall& k = t.kernels[static_cast<size_t>(t.first_failing)];  // the kernel searched inside
  if (k.code.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(s.options.repro_dir, ec);
  const std::string ext = k.name.rfind("cpp_", 0) == 0 ? ".cpp" : ".py";
  const std::filesystem::path path = std::filesystem::path(s.options.repro_dir) / (k.name + ext);
  std::ofstream f(path);
  f << k.code;
  if (f.good()) t.inside->code_file = path.string();
}

}  // namespace

void write_culprit_repro(RunState& s) {
  if (s.options.repro_dir.empty()) return;
  write_kernel_code(s);
  if (!s.result.localization) return;
  // In the graph that names the culprit: the region inlined when localization went inside one.
  const RunState& c = s.culprit_job();
  const Culprit& culprit = c.result.localization->culprit;
  const bool named = culprit.named();
  if (named) s.result.localization->repro = write_repro(c.program, culprit, c.reference, c.options);
}

}  // namespace pt2diff
