// engine/report/report_fields.h — the report's object descriptions (json_report.cpp) that other documents hold: the
// size sweep's compile shapes and its localized runs are the report's own objects, described once.
#pragma once

#include "graphs/json_fields.h"
#include "pt2diff/results.h"

namespace pt2diff::json_fields {

Object<ShapeCompile> describe(Tag<ShapeCompile>);
Object<DiffResult> describe(Tag<DiffResult>);

}  // namespace pt2diff::json_fields
