// pt2diff/pt2diff.h — the public API (the advanced one, for writing backends or driving the
// interpreter yourself, is in pt2diff/advanced/ and not included here).
//
//   #include <pt2diff/pt2diff.h>
//
//   pt2diff::Program program = pt2diff::load_program("graph.pt2");      // torch.export.save archive
//   pt2diff::BoundInputs in = pt2diff::bind_inputs(program, pt2diff::load_inputs("inputs.pt"));
//   pt2diff::DiffResult r = pt2diff::diff(program, in, {});              // Inductor vs eager vs fp64
//   std::cout << pt2diff::to_text(r);
//   if (r.compiled_failed) return 4;                                     // see r.compiles
//   if (r.diverged) return 1;
//
// Everything throws pt2diff::Error (one line, naming the file/node/input) on bad input; a compiler
// that fails is recorded in the result (DiffResult::compiles).
#pragma once

#include "pt2diff/compare.h"
#include "pt2diff/diff.h"
#include "pt2diff/error.h"
#include "pt2diff/graph.h"
#include "pt2diff/html.h"
#include "pt2diff/inputs.h"
#include "pt2diff/inspect.h"
#include "pt2diff/kernels.h"
#include "pt2diff/option_table.h"
#include "pt2diff/options.h"
#include "pt2diff/program.h"
#include "pt2diff/dist.h"
#include "pt2diff/recheck.h"
#include "pt2diff/results.h"
#include "pt2diff/sizes.h"
#include "pt2diff/sweep.h"
#include "pt2diff/values.h"
#include "pt2diff/verdict.h"
#include "pt2diff/workaround.h"
