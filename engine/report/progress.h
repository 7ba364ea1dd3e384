// engine/report/progress.h — one self-rewriting status line on a terminal while the engine waits on a
// compiler; silent when stderr is a pipe or a file.
#pragma once

#include <cstdio>
#include <map>
#include <string>

namespace pt2diff {

class TerminalProgress {
 public:
  /// Draws on `out` only when it is a terminal (or `force` is set, for tests).
  explicit TerminalProgress(std::FILE* out = stderr, bool force = false);
  ~TerminalProgress();
  /// BackendOptions::on_wait: "compiling 42 nodes, linear .. relu_3" waited `elapsed` seconds so far.
  void on_wait(const std::string& activity, double elapsed);
  /// Erases the line (before the report is printed).
  void clear();

 private:
  /// "compiling 42 nodes" and "compiling 42 nodes exploded" share an estimate: seconds per node.
  static std::string kind_of(const std::string& activity);
  static double nodes_of(const std::string& activity);
  void finish_current();

  std::FILE* out_;
  bool enabled_;
  std::string current_;
  double current_elapsed_ = 0;
  std::map<std::string, double> seconds_per_node_;  ///< from finished activities, by kind
  size_t drawn_ = 0;
};

}  // namespace pt2diff
