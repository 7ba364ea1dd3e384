// engine/diff/repro_stage.cpp — stage write_culprit_repro: a named culprit written as a standalone
// archive, its inputs and the command that reproduces the verdict (DiffOptions::repro_dir).
#include "engine/diff/stages.h"
#include "engine/diff/repro_writer.h"

namespace pt2diff {

void write_culprit_repro(RunState& s) {
  if (!s.result.localization || s.options.repro_dir.empty()) return;
  Localization& loc = *s.result.localization;
  const bool named = loc.culprit.kind == Culprit::Kind::SingleOp || loc.culprit.kind == Culprit::Kind::Window;
  if (named) loc.repro = write_repro(s.program, loc.culprit, s.reference, s.options);
}

}  // namespace pt2diff
