// engine/diff/repro_writer.h — the culprit window as a standalone archive, its inputs and the
// command that reproduces the verdict.
#pragma once

#include <string>

#include "engine/localize/compiled_oracle.h"
#include "pt2diff/diff.h"

namespace pt2diff {

/// Writes DIR/repro.pt2, DIR/repro_inputs.pt and DIR/README.md for `culprit` (a single op or a
/// window). The window is exported by the Inductor worker (torch.export); failures are returned, not thrown.
Repro write_repro(const Program& program, const Culprit& culprit, const ReferenceRuns& refs, const DiffOptions& options);

}  // namespace pt2diff
