// graphs/wording/wording.h — what pt2diff says about a run, worded once (no torch).
//
// Two kinds of sentences live here, and nowhere else:
// - the sentences the stages store in the results (a culprit's and a confirmation's summary, a workaround's, a
//   NaN's origin, the run's warnings): each is a function of the facts it says, never of a stage's state;
// - the notes the reports write about those results (the verdict's words, a suspicious or vacuous output, a node
//   that stands out, the confirmation): a `Sentence` that the text report, the summary (pt2diff/testing.h's failure
//   message; Python's DiffResult.summary()) and the HTML report render from the same words.
// What stays where it is found: an error's message with its remedy (thrown where the input is checked), a verdict
// rule's detail (its row in graphs/rules), a hint's (its experiment), generated code (the workaround's lines, the
// repro's files), and labels (an output's name).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pt2diff/results.h"

namespace pt2diff::wording {

// ---- Sentences the reports render -------------------------------------------------------------------------------

/// A sentence as words, code (a flag, a node's name) and ratios, rendered as plain text or as HTML with the same
/// words: code in <code>, a ratio's "x" as &times;, everything escaped.
///
///     Sentence().words("the rule passes, but compiled is ").ratio(12.5).words(" farther").code("--node-ratio 4")
class Sentence {
 public:
  Sentence& words(std::string_view s);
  Sentence& code(std::string_view s);
  /// "12.5x", "150x" (no decimals from 100 on), "inf".
  Sentence& ratio(double v);
  /// A measured figure, "{:.3g}".
  Sentence& number(double v);
  std::string text() const;
  std::string html() const;

 private:
  struct Part {
    enum class Kind { Words, Code, Ratio } kind;
    std::string s;  ///< words or code
    double v = 0;   ///< a ratio
  };
  std::vector<Part> parts_;
};

/// `&`, `<`, `>`, `"` and `'` as entities: safe in HTML/SVG text and in quoted attributes.
std::string html_escape(std::string_view text);
/// "12.5x", "150x", "inf": a ratio of errors as the text report and the summary print it.
std::string ratio(double v);
/// "a, b, c"; past 6 names "a, b, c, d, e, ... (9 in all)".
std::string listed(const std::vector<std::string>& names);

/// The run's verdict in capitals ("COMPILER FAILED", "DIVERGED", "SUSPICIOUS", "AGREE") and what qualifies it
/// ("at a node; the outputs pass", "a compile failed: see compiles"; empty when nothing does).
struct VerdictWords {
  std::string word;
  std::string note;
  /// "DIVERGED (at a node; the outputs pass)".
  std::string text() const { return note.empty() ? word : word + " (" + note + ")"; }
};
VerdictWords verdict(const DiffResult& r);
/// The first line of a failing test's message (pt2diff/testing.h): why the run counts as failing.
std::string failure_lead(const DiffResult& r);

/// An output that passes the rule yet is at least --suspicious-ratio times farther from fp64 than eager: "the rule
/// passes (same), but compiled is 12.5x farther from fp64 than eager (RMSE 3.1e-05 vs 2.5e-06; --suspicious-ratio 4)".
Sentence suspicious(const Verdict& v, const ToleranceRule& rule);
/// An output the rule cannot judge (its blind spot): "(tiny_output): rule same cannot see a 1% error in this output
/// (...); --rule relative judges it at its scale".
Sentence vacuous(const Verdict& v, const ToleranceRule& rule);
/// A node the node verdict finds: "node mm_3 (aten.mm.default) stands out (fail): fed fp64-exact inputs, ...".
Sentence stands_out(const NodeFinding& f, const ToleranceRule& rule);
/// The confirmation of the node evidence: "confirmation (confirmed, 1 compile, 2.31 s): with mm_3 eager, ...".
Sentence confirmation(const NodeConfirmation& c);
/// A hint's line: "dtype_promotion (explained_by_promotion): ...".
std::string hint_line(const Hint& h);

// ---- Sentences the stages store -----------------------------------------------------------------------------------

/// The localization search's culprit (Culprit::summary), from its conclusion, kind, nodes, ops and verdict:
/// "addmm_1 (aten.addmm.default) diverges on its own: fed with fp64-exact inputs, its compiled result fails the rule
/// (...)"; `max_compiles` says a budget that ran out, `why` the compiler lost (Conclusion::CompilerLost).
std::string culprit_summary(const Culprit& c, size_t max_compiles, std::string_view why = {});
/// The search inside a kernel (KernelCulprit::summary), from its kind, nodes and op; `detail`: the decisive probe's
/// verdict detail (for an inconclusive search, the whole kernel's, which passes); `why`: why the search stopped.
std::string kernel_culprit_summary(const KernelCulprit& k, std::string_view detail, std::string_view why = {});

/// name_node_culprit: the culprit named by the node evidence (Culprit::summary) and its verdict's detail.
std::string node_evidence_culprit(const NodeFinding& f);
std::string node_evidence_detail(const NodeFinding& f, const ToleranceRule& rule);

/// name_node_culprit: the confirmation's summary when the backend cannot leave nodes eager, when its compile
/// failed, and by its conclusion (`worst_output`, `worst_ratio`: the worst output with the nodes eager).
std::string confirmation_unavailable(std::string_view backend);
std::string confirmation_failed(const std::vector<std::string>& eager, std::string_view message);
std::string confirmation_summary(const NodeConfirmation& c, std::string_view worst_output, double worst_ratio);

/// find_workaround: why no set is searched, or none found; the lever of a node without a source line.
std::string workaround_not_needed();
std::string workaround_unavailable(std::string_view backend, std::string_view why);
std::string workaround_eager_fails();
std::string workaround_out_of_budget(size_t max_compiles);
std::string workaround_compiler_lost(std::string_view why);
std::string lever_without_source(std::string_view node, std::string_view op);
/// find_workaround: the verification of the levers (Workaround::verification). `from_nodes`: the set is the node
/// verdict's, whose outputs must come back within kNodeConfirmBound of eager's error.
struct LeverCheck {
  bool passes = false;
  size_t eager_nodes = 0, graph_nodes = 0;
  std::string output, detail;  ///< where it fails, and why ("" output: the compile failed)
  std::string worst_output;    ///< where it passes: the worst output, and its ratio
  double worst_ratio = 0;
};
std::string workaround_verification(const LeverCheck& check, bool from_nodes);
/// find_workaround: the workaround's one line (Workaround::summary) once a set is found.
std::string workaround_found(const Workaround& w, size_t set_size, size_t graph_nodes, bool from_nodes,
                             double worst_ratio);

/// localize_in_region: looking inside an autocast region that is the culprit.
std::string autocast_region_closed(std::string_view region, std::string_view why);
std::string autocast_region_failed(std::string_view region, std::string_view why);
std::string inside_autocast_region(std::string_view region, const AutocastRegion& a);
/// "<where>: <what the search inside found> (N compiles)" when it names no culprit there.
std::string autocast_region_unnamed(std::string_view where, const DiffResult& inside, size_t compiles);

/// observe_twin: an AOTInductor package's kernels observed through its archive's compile (the twin).
std::string twin_not_compiled(std::string_view why);
std::string twin_failed(std::string_view twin, std::string_view message);
std::string twin_agrees(const std::vector<std::string>& package_fails, std::string_view twin);
std::string twin_observed(std::string_view twin, const std::vector<std::string>& twin_fails);

/// judge_outputs: a training step whose eager loss or gradients are not finite; `first`: the first node whose eager
/// value is not (node, op, source; empty node when none is known).
std::string eager_nonfinite(int64_t bad, int64_t numel, std::string_view output, const NodeError* first);
/// judge_outputs: a written input the compiled side does not give back, and an output it does not return.
std::string written_input_not_given(std::string_view compiled, std::string_view output);
std::string output_not_returned(std::string_view compiled);

/// judge_kernels: why a kernel's buffer is not judged.
std::string buffer_without_value(std::string_view node, std::string_view dtype, size_t candidates);
std::string buffer_size_differs(std::string_view value, int64_t numel, int64_t buffer_numel);

/// trace_nonfinite: where the first NaN/Inf of the compiled code comes from (NonfiniteOrigin::detail): a graph input
/// holding them; a buffer no exported node is named for; the model (eager makes them too); the compiler (the op
/// compiled alone makes them); the kernel (the op alone stays finite, or was not compiled alone), with its fused nodes.
std::string nonfinite_in_input(std::string_view input, int64_t count, std::string_view kernel);
std::string nonfinite_in_buffer(std::string_view kernel, std::string_view buffer);
std::string nonfinite_from_model(std::string_view node, int64_t count);
std::string nonfinite_from_compiler(std::string_view node, int64_t count);
std::string nonfinite_in_kernel(std::string_view kernel, std::string_view node, int64_t count, bool compiled_alone,
                                const std::vector<std::string>& fused);

/// plan_run: a GPU export run on the CPU; the rewrites grouped by kind ("device cuda:0 -> cpu (arange, full)").
std::string exported_elsewhere(std::string_view export_device, std::string_view device_type,
                               const std::vector<std::string>& rewrites);
/// plan_run: nodes the exploded compile leaves out (they write in place or read a value written in place).
std::string left_out_of_exploded(const std::vector<std::string>& nodes);
/// plan_run: where the fp64 run goes (RunDevices::why) when --reference-device is auto and a memory limit is known
/// (`limit`: "--gpu-memory 8 GiB", "the 70.2 GiB free on cuda:0").
std::string references_fit(double native_bytes, double reference_bytes, std::string_view limit);
std::string reference_on_the_cpu(double native_bytes, double reference_bytes, std::string_view limit);

/// repro_writer: why the compiler's own files for the window were not written.
std::string no_artifacts_not_inductor(std::string_view compiled);
std::string no_artifacts_other_device(std::string_view run_device, std::string_view export_type,
                                      std::string_view written_for);

}  // namespace pt2diff::wording
