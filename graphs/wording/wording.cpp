// graphs/wording/wording.cpp — what pt2diff says about a run, worded once (wording.h).
#include "graphs/wording/wording.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "graphs/memory_estimate.h"
#include "pt2diff/hints.h"

namespace pt2diff::wording {

namespace {

const char* plural(size_t n) { return n == 1 ? "" : "s"; }

}  // namespace

// ---- Sentences the reports render -------------------------------------------------------------------------------

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Sentence& Sentence::words(std::string_view s) {
  parts_.push_back({Part::Kind::Words, std::string(s)});
  return *this;
}

Sentence& Sentence::code(std::string_view s) {
  parts_.push_back({Part::Kind::Code, std::string(s)});
  return *this;
}

Sentence& Sentence::ratio(double v) {
  parts_.push_back({Part::Kind::Ratio, "", v});
  return *this;
}

Sentence& Sentence::number(double v) { return words(fmt::format("{:.3g}", v)); }

std::string Sentence::text() const {
  std::string out;
  for (const Part& p : parts_) out += p.kind == Part::Kind::Ratio ? wording::ratio(p.v) : p.s;
  return out;
}

std::string Sentence::html() const {
  std::string out;
  for (const Part& p : parts_) {
    if (p.kind == Part::Kind::Code) {
      out += "<code>" + html_escape(p.s) + "</code>";
    } else if (p.kind == Part::Kind::Ratio) {
      std::string r = wording::ratio(p.v);
      out += r.back() == 'x' ? r.substr(0, r.size() - 1) + "&times;" : r;
    } else {
      out += html_escape(p.s);
    }
  }
  return out;
}

std::string ratio(double v) {
  return std::isinf(v) ? "inf" : v >= 100 ? fmt::format("{:.0f}x", v) : fmt::format("{:.3g}x", v);
}

std::string listed(const std::vector<std::string>& names) {
  if (names.size() <= 6) return fmt::format("{}", fmt::join(names, ", "));
  return fmt::format("{}, ... ({} in all)", fmt::join(names.begin(), names.begin() + 5, ", "), names.size());
}

VerdictWords verdict(const DiffResult& r) {
  bool graph_failed = false;
  for (const CompileRecord& c : r.compiles) graph_failed = graph_failed || (c.what == "graph" && !c.ok);
  const Level nodes = r.node_verdict.level;
  VerdictWords v;
  if (graph_failed) {
    v.word = "COMPILER FAILED";
  } else if (r.diverged) {
    v.word = "DIVERGED";
  } else if (nodes == Level::Fail) {
    v.word = "DIVERGED";
    v.note = "at a node; the outputs pass";
  } else if (r.suspicious) {
    v.word = "SUSPICIOUS";
  } else if (nodes != Level::Pass) {
    v.word = "SUSPICIOUS";
    v.note = "a node stands out; the outputs pass";
  } else {
    v.word = "AGREE";
  }
  if (r.compiled_failed && !graph_failed)
    v.note += std::string(v.note.empty() ? "" : "; ") + "a compile failed: see compiles";
  return v;
}

std::string failure_lead(const DiffResult& r) {
  if (!r.diverged && !r.compiled_failed && r.suspicious)
    return "pt2diff: the compiled graph is suspicious: farther from fp64 than eager by the suspicious ratio or more "
           "(--fail-on-suspicious)";
  if (!r.diverged && !r.compiled_failed && !r.node_verdict.findings.empty())
    return fmt::format(
        "pt2diff: the compiled graph is {} at a node: fed fp64-exact inputs, a node's compiled result is far farther "
        "from fp64 than eager's (the node verdict; the outputs pass the rule)",
        level_name(r.node_verdict.level));
  return "pt2diff: the compiled graph does not agree with the reference";
}

Sentence suspicious(const Verdict& v, const ToleranceRule& rule) {
  return Sentence()
      .words(fmt::format("the rule passes ({}), but compiled is ", v.reason))
      .ratio(v.error_ratio)
      .words(" farther from fp64 than eager (RMSE ")
      .number(v.rmse_result)
      .words(" vs ")
      .number(v.rmse_eager)
      .words("; ")
      .code(fmt::format("--suspicious-ratio {:g}", rule.suspicious_ratio))
      .words(")");
}

Sentence vacuous(const Verdict& v, const ToleranceRule& rule) {
  return Sentence()
      .words("(")
      .code(v.blind_spot)
      .words(fmt::format("): rule {} cannot see a 1% error in this output ({}); ", rule_name(rule), v.blind_detail))
      .code("--rule relative")
      .words(" judges it at its scale");
}

Sentence stands_out(const NodeFinding& f, const ToleranceRule& rule) {
  Sentence s;
  s.words("node ").code(f.node).words(
      fmt::format(" ({}) stands out ({}): fed fp64-exact inputs, its compiled result is ", f.op, level_name(f.level)));
  s.ratio(f.ratio)
      .words(" farther from fp64 than eager's (RMSE ")
      .number(f.compiled_local.rmse)
      .words(" vs ")
      .number(f.eager_local.rmse);
  s.words("; ").code(fmt::format("--node-ratio {:g}", rule.node_ratio)).words(") at ");
  s.words(f.source.empty() ? "no source line" : f.source);
  if (!f.module_path.empty()) s.words(" [" + f.module_path + "]");
  if (!f.also.empty()) s.words("; the same op and shape stand out at " + listed(f.also));
  return s;
}

Sentence confirmation(const NodeConfirmation& c) {
  return Sentence()
      .words("confirmation (")
      .code(c.conclusion)
      .words(fmt::format(", {} compile{}, {:.2f} s): {}", c.compiles, plural(c.compiles), c.seconds, c.summary));
}

std::string hint_line(const Hint& h) { return fmt::format("{} ({}): {}", h.kind, h.finding, h.summary); }

// ---- Sentences the stages store -----------------------------------------------------------------------------------

std::string culprit_summary(const Culprit& c, size_t max_compiles, std::string_view why) {
  using C = Culprit::Conclusion;
  const std::string first = c.nodes.empty() ? "?" : c.nodes.front();
  switch (c.conclusion) {
    case C::BudgetExhausted:
      return fmt::format("the budget of {} compiles ran out before the first diverging op was found", max_compiles);
    case C::NoPrefixDiverges:
      return "no prefix of the failing outputs' cone diverges when compiled on its own: the divergence needs the whole "
             "graph "
             "compiled together";
    case C::FlakyBoundary:
      return fmt::format(
          "flaky: re-running the probes around {} gave different answers; the compiler (or the graph) is "
          "nondeterministic, so no culprit is named",
          first);
    case C::BudgetExhaustedLate:
      return fmt::format("the budget of {} compiles ran out in phase 2; divergence first shows at {}", max_compiles,
                         first);
    case C::AccumulatedUpstream:
      return fmt::format(
          "divergence first shows at {}, but no window ending there diverges when fed with fp64-exact "
          "inputs: it comes from error accumulated upstream in the compiled run",
          first);
    case C::CompilerLost:
      return fmt::format("localization stopped: {}", why);
    case C::RandomStream:
      return fmt::format(
          "divergence first shows at {}, which draws random numbers: the compiled code draws a different random "
          "stream than eager, so its values cannot be compared op by op (see the compiler_lever hint)",
          first);
    case C::Named:
      break;
  }
  // A suspicious value (localized with --localize-suspicious) passes the rule: say what it is instead.
  const Verdict& v = c.verdict;
  const std::string fails =
      v.level == Level::Suspicious
          ? fmt::format(
                "is suspicious: it passes the rule ({}) but is {}x farther from fp64 than eager", v.detail,
                v.error_ratio >= 100 ? fmt::format("{:.0f}", v.error_ratio) : fmt::format("{:.3g}", v.error_ratio))
          : fmt::format("fails the rule ({})", v.detail);
  if (c.kind == Culprit::Kind::SingleOp)
    return fmt::format("{} ({}) diverges on its own: fed with fp64-exact inputs, its compiled result {}", first,
                       c.ops.empty() ? "?" : c.ops.front(), fails);
  return fmt::format(
      "{} ops, {} .. {}, diverge together (each alone passes): compiled as one region from fp64-exact "
      "inputs, their result {}",
      c.nodes.size(), first, c.nodes.empty() ? "?" : c.nodes.back(), fails);
}

std::string kernel_culprit_summary(const KernelCulprit& k, std::string_view detail, std::string_view why) {
  if (!why.empty()) return fmt::format("the search inside kernel {} stopped: {}", k.kernel, why);
  if (k.nodes.empty()) return fmt::format("kernel {}: none of its nodes computes the failing value", k.kernel);
  const std::string nodes = fmt::format("{}", fmt::join(k.nodes, ", "));
  if (k.kind == "single_op")
    return fmt::format(
        "kernel {} (nodes {}): op {} ({}) diverges: compiled on its own from fp64-exact inputs it fails the rule ({})",
        k.kernel, nodes, k.op, k.target, detail);
  if (k.kind == "fused")
    return fmt::format(
        "kernel {} (nodes {}): {} ({}) diverges only when fused with {}: compiled alone it passes, compiled "
        "after them from fp64-exact inputs it fails the rule ({})",
        k.kernel, nodes, k.op, k.target, fmt::join(k.fused_with, ", "), detail);
  return fmt::format(
      "kernel {} (nodes {}): compiled as one region from fp64-exact inputs, its nodes pass at {} ({}): the "
      "failing buffer takes its error from upstream of the kernel",
      k.kernel, nodes, k.nodes.back(), detail);
}

std::string node_evidence_culprit(const NodeFinding& f) {
  return fmt::format(
      "{} ({}) diverges on its own: fed with fp64-exact inputs, its compiled result is {:.3g}x farther from fp64 "
      "than eager's (node evidence from the exploded compile; the outputs pass){}",
      f.node, f.op, f.ratio,
      f.also.empty() ? "" : fmt::format("; the same op and shape stand out at {}", listed(f.also)));
}

std::string node_evidence_detail(const NodeFinding& f, const ToleranceRule& rule) {
  return fmt::format(
      "compiled local RMSE to fp64 {:.3g} vs eager's {:.3g}: {:.3g}x (--node-ratio {:g}), {:.3g} roundoffs of {}",
      f.compiled_local.rmse, f.eager_local.rmse, f.ratio, rule.node_ratio, f.roundoffs, f.dtype);
}

std::string confirmation_unavailable(std::string_view backend) {
  return fmt::format("the {} backend cannot leave nodes eager: the node evidence stands unconfirmed", backend);
}

std::string confirmation_failed(const std::vector<std::string>& eager, std::string_view message) {
  return fmt::format("the compile with {} eager failed: {}", listed(eager), message);
}

std::string confirmation_summary(const NodeConfirmation& c, std::string_view worst_output, double worst_ratio) {
  const std::string eager = listed(c.eager);
  if (c.conclusion == "invisible_at_outputs")
    return fmt::format(
        "the outputs already were within {:g}x of eager's error ({} at {:.3g}x; {:.3g}x with {} eager): they "
        "absorb the error, which only the node shows",
        kNodeConfirmBound, c.output, c.before, c.after, eager);
  if (c.conclusion == "confirmed")
    return fmt::format(
        "with {} eager, the outputs' error goes back to eager's: {} from {:.3g}x to {:.3g}x eager's RMSE to fp64",
        eager, c.output, c.before, c.after);
  return fmt::format(
      "with {} eager, the outputs stay off eager's error ({} at {:.3g}x, was {:.3g}x; worst {} at {:.3g}x): "
      "something else moves them too",
      eager, c.output, c.after, c.before, worst_output, worst_ratio);
}

std::string workaround_not_needed() {
  return "the compiled graph passes the rule and no node stands out: nothing needs to run eagerly";
}

std::string workaround_unavailable(std::string_view backend, std::string_view why) {
  return fmt::format("the {} backend cannot leave nodes eager: {}", backend, why);
}

std::string workaround_eager_fails() {
  return "even with every node eager the graph fails the rule: the divergence is not the compiler's";
}

std::string workaround_out_of_budget(size_t max_compiles) {
  return fmt::format("no passing eager set within {} compiles (--workaround-max-compiles)", max_compiles);
}

std::string workaround_compiler_lost(std::string_view why) {
  return fmt::format("the compiler was lost during the search: {}", why);
}

std::string lever_without_source(std::string_view node, std::string_view op) {
  return fmt::format("node {} ({}; no source line recorded)", node, op);
}

std::string workaround_verification(const LeverCheck& check, bool from_nodes) {
  if (!check.passes)
    return fmt::format("fails at {}: {}", check.output.empty() ? "the compile" : check.output, check.detail);
  if (from_nodes)
    return fmt::format(
        "passes the rule with {} of {} nodes eager, the outputs' error at {:.3g}x eager's (at {}; <= {:g} needed)",
        check.eager_nodes, check.graph_nodes, check.worst_ratio, check.worst_output, kNodeConfirmBound);
  return fmt::format("passes the rule with {} of {} nodes eager", check.eager_nodes, check.graph_nodes);
}

std::string workaround_found(const Workaround& w, size_t set_size, size_t graph_nodes, bool from_nodes,
                             double worst_ratio) {
  std::vector<std::string> names;
  for (const EagerNode& n : w.nodes) names.push_back(n.node);
  if (names.size() > 6) {
    names.resize(6);
    names.push_back("...");
  }
  const std::string outcome =
      !w.verified  ? "NOT verified: " + w.verification
      : from_nodes ? fmt::format("verified, the outputs' error then goes back to {:.3g}x eager's", worst_ratio)
                   : std::string("verified, the compiled graph then passes the rule");
  // An answer from an earlier compile of the same set (the node verdict's confirmation) costs no compile.
  const std::string cost = w.compiles == 0 ? std::string("no compile of its own: the confirmation compiled that set")
                                           : fmt::format("{} compile{}", w.compiles, plural(w.compiles));
  return fmt::format("leave {} of {} node{} eager ({}){}: {} ({}{})", set_size, graph_nodes, plural(graph_nodes),
                     fmt::join(names, ", "),
                     from_nodes  ? ", the nodes the node verdict names"
                     : w.minimal ? ""
                                 : ", not shown minimal",
                     outcome, cost, w.minimal || from_nodes ? "" : ", the budget ran out");
}

std::string autocast_region_closed(std::string_view region, std::string_view why) {
  return fmt::format("the culprit {} is a torch.autocast region; pt2diff cannot look inside it: {}", region, why);
}

std::string autocast_region_failed(std::string_view region, std::string_view why) {
  return fmt::format("the culprit {} is a torch.autocast region; looking inside it failed: {}", region, why);
}

std::string inside_autocast_region(std::string_view region, const AutocastRegion& a) {
  return fmt::format("inside the autocast region {} ({} {}, {} nodes, inlined)", region, a.device_type, a.dtype,
                     a.body_nodes.size());
}

std::string autocast_region_unnamed(std::string_view where, const DiffResult& inside, size_t compiles) {
  return fmt::format(
      "{}: {} ({} compiles)", where,
      inside.localization ? inside.localization->culprit.summary
      : inside.diverged
          ? "no localization ran"
          : "the inlined graph agrees when compiled: the divergence shows only with the region compiled as one op",
      compiles);
}

std::string twin_not_compiled(std::string_view why) {
  return fmt::format("the package cannot be observed and its archive could not be compiled instead ({})", why);
}

std::string twin_failed(std::string_view twin, std::string_view message) {
  return fmt::format("the package cannot be observed and {} failed ({})", twin, message);
}

std::string twin_agrees(const std::vector<std::string>& package_fails, std::string_view twin) {
  return fmt::format(
      "the package's outputs disagree ({}) but {} agrees there: the package was not built by this torch and Inductor "
      "config from this archive (another torch version or config, or another export?); the kernel table below is the "
      "instrumented compile's, and localization is skipped: rebuild the package here to confirm, or run pt2diff with "
      "the torch that built it",
      fmt::join(package_fails, ", "), twin);
}

std::string twin_observed(std::string_view twin, const std::vector<std::string>& twin_fails) {
  return fmt::format(
      "the package cannot be observed: the kernel table and localization come from {}, whose outputs fail too ({})",
      twin, fmt::join(twin_fails, ", "));
}

std::string eager_nonfinite(int64_t bad, int64_t numel, std::string_view output, const NodeError* first) {
  const std::string where =
      first ? fmt::format("; the first node whose eager value is not finite: {} ({}){}", first->name, first->target,
                          first->source.empty() ? "" : " at " + first->source)
            : "";
  return fmt::format(
      "eager itself gives {} NaN/Inf of {} in {}{}: the training step's own math, not the compiler's; fix the model, "
      "the loss or the inputs (a log or a division by 0, an overflow in low precision) and run again",
      bad, numel, output, where);
}

std::string written_input_not_given(std::string_view compiled, std::string_view output) {
  return fmt::format("{} does not give {}: it is not judged", compiled, output);
}

std::string output_not_returned(std::string_view compiled) {
  return fmt::format("{} does not return this output", compiled);
}

std::string buffer_without_value(std::string_view node, std::string_view dtype, size_t candidates) {
  return candidates == 0 ? fmt::format("{} has no {} output", node, dtype)
                         : fmt::format("{} has {} outputs it could be", node, candidates);
}

std::string buffer_size_differs(std::string_view value, int64_t numel, int64_t buffer_numel) {
  return fmt::format("{} has {} elements, the buffer {}", value, numel, buffer_numel);
}

std::string nonfinite_in_input(std::string_view input, int64_t count, std::string_view kernel) {
  return fmt::format("graph input {} holds {} NaN/Inf elements; {} first writes them in the compiled code", input,
                     count, kernel);
}

std::string nonfinite_in_buffer(std::string_view kernel, std::string_view buffer) {
  return fmt::format("{} writes NaN/Inf in {} (no exported node named for it)", kernel,
                     buffer.empty() ? "a buffer" : buffer);
}

std::string nonfinite_from_model(std::string_view node, int64_t count) {
  return fmt::format("eager computes {} NaN/Inf elements at {} too: the model makes them, not the compiler", count,
                     node);
}

std::string nonfinite_from_compiler(std::string_view node, int64_t count) {
  return fmt::format(
      "{} compiled alone on finite inputs (the exploded compile) makes {} NaN/Inf elements; eager makes none", node,
      count);
}

std::string nonfinite_in_kernel(std::string_view kernel, std::string_view node, int64_t count, bool compiled_alone,
                                const std::vector<std::string>& fused) {
  return fmt::format("{} writes NaN/Inf for {} ({} elements) where eager is finite{}", kernel, node, count,
                     compiled_alone
                         ? fmt::format(", but {} compiled alone stays finite: it comes from the kernel's fusion of {}",
                                       node, fmt::join(fused, ", "))
                         : " (no exploded compile to tell the op from the fusion)");
}

std::string exported_elsewhere(std::string_view export_device, std::string_view device_type,
                               const std::vector<std::string>& rewrites) {
  return fmt::format(
      "the graph was exported on {}; pt2diff's eager and fp64 runs are on the CPU (--device cpu, or no GPU "
      "here), so eager is CPU eager (close to, not bit for bit, {} eager){}{}",
      export_device, device_type, rewrites.empty() ? "" : "; run differently there: ", fmt::join(rewrites, "; "));
}

std::string left_out_of_exploded(const std::vector<std::string>& nodes) {
  return fmt::format(
      "the exploded compile leaves out {} node{} that write in place or read a value written in "
      "place after it was made ({}): one op alone cannot keep the order of the writes; "
      "localization judges them in windows that keep it",
      nodes.size(), plural(nodes.size()), fmt::join(nodes, ", "));
}

std::string references_fit(double native_bytes, double reference_bytes, std::string_view limit) {
  return fmt::format("auto: the runs need about {} (fp64 {}) of {}", format_bytes(native_bytes + reference_bytes),
                     format_bytes(reference_bytes), limit);
}

std::string reference_on_the_cpu(double native_bytes, double reference_bytes, std::string_view limit) {
  return fmt::format("auto: the fp64 run (about {}) does not fit beside the eager runs ({}) in {}; it runs on the CPU",
                     format_bytes(reference_bytes), format_bytes(native_bytes), limit);
}

std::string no_artifacts_not_inductor(std::string_view compiled) {
  return fmt::format("the compiled side is {}, not Inductor: pt2diff writes Inductor's debug trace only", compiled);
}

std::string no_artifacts_other_device(std::string_view run_device, std::string_view export_type,
                                      std::string_view written_for) {
  return fmt::format(
      "the run compiled for {} but the window of this {} export is written for {}: its compile there would not be "
      "the one that went wrong (export the model on {} for a repro there)",
      run_device, export_type, written_for, run_device);
}

}  // namespace pt2diff::wording
