// pt2diff/error.h — the one exception type: bad input or a bug in pt2diff, never a verdict.
//
//   try { auto program = pt2diff::load_program("graph.pt2"); }
//   catch (const pt2diff::Error& e) { std::cerr << "pt2diff: " << e.what() << "\n"; return e.exit_code(); }
//
// `what()` is one line a user can act on: it names the file, node or input, says what is wrong
// and, where there is one, what to do about it.
#pragma once

#include <stdexcept>
#include <string>

namespace pt2diff {

class Error : public std::runtime_error {
 public:
  enum class Kind {
    Usage,        ///< bad command line or options
    BadArchive,   ///< the graph file cannot be read as a torch.export archive
    BadInputs,    ///< inputs missing, unreadable or not matching the graph
    Unsupported,  ///< valid input that pt2diff cannot handle (yet)
    Internal,     ///< a bug in pt2diff
  };

  Error(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

  Kind kind() const { return kind_; }
  /// Exit code for the CLI: 3 for internal errors, 2 for everything the user can fix.
  int exit_code() const { return kind_ == Kind::Internal ? 3 : 2; }

 private:
  Kind kind_;
};

}  // namespace pt2diff

/// Throws pt2diff::Error(Kind::Internal) naming the failed condition: for invariants, not input checks.
#define PT2DIFF_CHECK(cond, msg)                                                                   \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      throw ::pt2diff::Error(::pt2diff::Error::Kind::Internal,                                     \
                             std::string("internal error: ") + (msg) + " (" #cond " failed at " + \
                                 __FILE__ + ":" + std::to_string(__LINE__) + ")");                 \
  } while (0)
