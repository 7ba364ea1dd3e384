// engine/report/progress.cpp — the status line and its estimate. The ETA of a compile comes from the
// compiles already seen in this run (seconds per node of the same kind); the first one shows elapsed
// time only, because a guess with nothing behind it would mislead.
#include "engine/report/progress.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <unistd.h>

namespace pt2diff {

TerminalProgress::TerminalProgress(std::FILE* out, bool force) : out_(out), enabled_(force || isatty(fileno(out))) {
  if (const char* term = std::getenv("TERM"); !force && term && std::string(term) == "dumb") enabled_ = false;
}

TerminalProgress::~TerminalProgress() { clear(); }

namespace {
/// "[first failing end, probe 3 of ~12] compiling 7 nodes, ..." → "compiling 7 nodes, ...".
std::string without_step(const std::string& activity) {
  if (activity.empty() || activity[0] != '[') return activity;
  auto close = activity.find("] ");
  return close == std::string::npos ? activity : activity.substr(close + 2);
}
}  // namespace

std::string TerminalProgress::kind_of(const std::string& activity) {
  const std::string a = without_step(activity);
  return a.substr(0, a.find(' '));
}

double TerminalProgress::nodes_of(const std::string& text) {
  const std::string activity = without_step(text);
  auto space = activity.find(' ');
  if (space == std::string::npos) return 1;
  return std::max(1.0, std::atof(activity.c_str() + space + 1));
}

void TerminalProgress::finish_current() {
  if (current_.empty()) return;
  seconds_per_node_[kind_of(current_)] = current_elapsed_ / nodes_of(current_);
  current_.clear();
}

void TerminalProgress::on_wait(const std::string& activity, double elapsed) {
  if (activity != current_ || elapsed < current_elapsed_) {
    finish_current();
    current_ = activity;
  }
  current_elapsed_ = elapsed;
  if (!enabled_) return;
  std::string text = fmt::format("pt2diff: {}: {:.0f} s", activity, elapsed);
  if (auto rate = seconds_per_node_.find(kind_of(activity)); rate != seconds_per_node_.end()) {
    const double remaining = rate->second * nodes_of(activity) - elapsed;
    text += remaining > 0 ? fmt::format(", ETA ~{:.0f} s", remaining) : ", taking longer than the last one";
  }
  if (text.size() > 110) text = text.substr(0, 107) + "...";
  fmt::print(out_, "\r{:<{}}", text, std::max(drawn_, text.size()));
  std::fflush(out_);
  drawn_ = text.size();
}

void TerminalProgress::clear() {
  if (!enabled_ || drawn_ == 0) return;
  fmt::print(out_, "\r{:<{}}\r", "", drawn_);
  std::fflush(out_);
  drawn_ = 0;
}

}  // namespace pt2diff
