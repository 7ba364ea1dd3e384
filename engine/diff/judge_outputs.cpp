// engine/diff/judge_outputs.cpp — stage judge_outputs: every graph output, compiled against eager with
// fp64 as referee (verdict_rule.cpp), and its error to fp64 both ways.
#include <ATen/ops/isfinite.h>
#include <algorithm>
#include <fmt/format.h>

#include "engine/compare/judge_measured.h"
#include "engine/diff/stages.h"
#include "graphs/wording/wording.h"

namespace pt2diff {

namespace {

OutputVerdict no_compiled_value(OutputVerdict ov, const std::string& why) {
  ov.verdict.pass = false;
  ov.verdict.reason = "no_compiled_value";
  ov.verdict.detail = why;
  return ov;
}

}  // namespace

c10::IValue compiled_output(const RunState& s, size_t i, const std::vector<c10::IValue>& outputs) {
  auto values = s.outputs.at(i).arg.values();
  if (values.empty()) return {};
  auto at = std::find(s.whole.outputs.begin(), s.whole.outputs.end(), values.front());
  if (at == s.whole.outputs.end()) return {};
  return outputs.at(static_cast<size_t>(at - s.whole.outputs.begin()));
}

std::optional<Verdict> judge_output(const RunState& s, size_t i, const at::Tensor& compiled, const Metrics* compiled_to_fp64,
                                    const Metrics* eager_to_fp64) {
  const Graph& g = s.program.ir.graph;
  const c10::IValue& eager = s.runs.native.outputs[i];
  const c10::IValue& fp64 = s.runs.fp64.outputs[i];
  if (!eager.isTensor()) return std::nullopt;
  auto values = s.outputs[i].arg.values();
  const std::string name = values.empty() ? std::string() : g.value(values.front()).name;
  const bool fp64_ok = fp64.isTensor() && !s.uncomparable_values.count(name);
  return judge_measured(compiled, eager.toTensor(), fp64_ok ? fp64.toTensor() : at::Tensor(), s.options.rule,
                        fp64_ok ? compiled_to_fp64 : nullptr, fp64_ok ? eager_to_fp64 : nullptr);
}

namespace {

/// A training step whose eager loss or gradient is not finite: its own math, not the compiler's. One line naming the
/// output and the first node whose eager value is not finite (RunState::result.eager_nonfinite, a warning too).
void check_step_is_finite(RunState& s) {
  DiffResult& r = s.result;
  for (size_t i = 0; i < r.outputs.size() && i < s.outputs.size(); ++i) {
    const OutputSpec::Kind kind = s.outputs[i].kind;
    if (kind != OutputSpec::Kind::LossOutput && kind != OutputSpec::Kind::GradientToParameter &&
        kind != OutputSpec::Kind::GradientToUserInput)
      continue;
    const at::Tensor& eager = r.values->outputs[i].eager;
    if (!eager.defined() || !eager.is_floating_point()) continue;
    const int64_t bad = eager.numel() - at::isfinite(eager).sum().item<int64_t>();
    if (bad == 0) continue;
    const NodeError* first = nullptr;
    for (const NodeError& n : r.nodes)
      for (const ValueError& v : n.values)
        if (!first && v.compared && v.propagated.nan + v.propagated.inf > 0) first = &n;
    r.eager_nonfinite = wording::eager_nonfinite(bad, eager.numel(), r.outputs[i].name, first);
    r.warnings.push_back(r.eager_nonfinite);
    return;
  }
}

}  // namespace

void judge_outputs(RunState& s) {
  const Graph& g = s.program.ir.graph;
  DiffResult& r = s.result;
  r.fail_on_suspicious = s.options.fail_on_suspicious;
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    const OutputSpec& spec = s.outputs[i];
    OutputVerdict ov;
    auto values = spec.arg.values();
    ov.name = values.empty() ? fmt::format("output #{}", i) : g.value(values.front()).name;
    ov.value = ov.name;
    ov.written_input = i >= s.program.ir.output_specs.size();
    if (ov.written_input)  // a graph input the graph writes in place: its value after the graph
      ov.name = fmt::format("{} '{}' after the graph", spec.kind == OutputSpec::Kind::BufferMutation      ? "buffer"
                                                      : spec.kind == OutputSpec::Kind::ParameterMutation ? "parameter"
                                                                                                         : "input",
                            spec.target);
    else if (spec.kind == OutputSpec::Kind::GradientToParameter || spec.kind == OutputSpec::Kind::GradientToUserInput)
      ov.name = spec.target + ".grad";  // a training step's gradient, named by its parameter: fc1.weight.grad
    else if (spec.kind == OutputSpec::Kind::LossOutput)
      ov.name = "loss";
    ov.role = std::string(output_kind_name(spec.kind)) + (spec.target.empty() ? "" : " of " + spec.target);
    const c10::IValue& eager = s.runs.native.outputs[i];
    const c10::IValue& fp64 = s.runs.fp64.outputs[i];
    if (!eager.isTensor()) continue;
    OutputValues kept;
    kept.eager = eager.toTensor();
    if (fp64.isTensor()) kept.fp64 = fp64.toTensor();
    const bool fp64_ok = fp64.isTensor() && !s.uncomparable_values.count(ov.value);
    NodeId producer = values.empty() ? kGraphInput : g.value(values.front()).producer;
    auto ulp_dtype = producer == kGraphInput ? std::nullopt : working_dtype(g, g.node(producer));
    if (fp64_ok) ov.eager_to_fp64 = measure(eager.toTensor(), fp64.toTensor(), ulp_dtype);
    const c10::IValue result = s.compiled ? compiled_output(s, i, *s.compiled) : c10::IValue();
    if (s.compiled && !result.isTensor() && i >= s.program.ir.output_specs.size()) {
      // A written input or buffer the compiled side keeps to itself (an AOTInductor package's buffers): not judged.
      r.warnings.push_back(wording::written_input_not_given(r.compiled, ov.name));
      continue;
    }
    if (!s.compiled) {
      ov = no_compiled_value(std::move(ov), r.compiles.back().message);
    } else if (!result.isTensor()) {
      ov = no_compiled_value(std::move(ov), wording::output_not_returned(r.compiled));
    } else {
      kept.compiled = result.toTensor();
      // Each side measured once: the errors reported are the ones the rule judges (where in the same ULPs).
      if (fp64_ok) ov.compiled_to_fp64 = measure(result.toTensor(), fp64.toTensor(), ulp_dtype);
      const at::ScalarType dtype = eager.toTensor().scalar_type();
      ov.verdict = *judge_output(s, i, result.toTensor(), fp64_ok ? known_ulps(ov.compiled_to_fp64, ulp_dtype, result.toTensor().scalar_type()) : nullptr,
                                 fp64_ok ? known_ulps(ov.eager_to_fp64, ulp_dtype, dtype) : nullptr);
    }
    r.diverged = r.diverged || !ov.verdict.pass;
    r.suspicious = r.suspicious || ov.verdict.level == Level::Suspicious;
    r.outputs.push_back(std::move(ov));
    r.values->outputs.push_back(std::move(kept));
  }
  check_step_is_finite(s);
}

}  // namespace pt2diff
