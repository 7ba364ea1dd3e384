// pt2diff/backend_spec.h — a --compiled spec ("inductor", "fault:mm_1:scale=0.05", "external:CMD")
// parsed once, by its owner, into what the rest of the engine asks of it (no torch).
//
//   BackendSpec s = BackendSpec::parse("external:python my_worker.py");
//   s.kind == BackendSpec::Kind::External; s.argument == "python my_worker.py"; s.takes_compiler_config()
#pragma once

#include <string>

namespace pt2diff {

struct BackendSpec {
  enum class Kind {
    Eager,     ///< "eager": every op on its ATen kernel, in process (the noise floor)
    Inductor,  ///< "inductor": the shipped Python worker, torch.compile's numbers
    Aoti,      ///< "aoti:PACKAGE.pt2": an AOTInductor package, whole graph only; "aoti" (no argument): the
               ///< archive's regions compiled by AOTInductor in the worker
    External,  ///< "external:COMMAND": any worker speaking docs/worker-protocol.md
    Fault,     ///< "fault:NODE:KIND": eager with a planted error (tests, demos)
  };
  Kind kind = Kind::Inductor;
  std::string argument;  ///< what follows "kind:" (PACKAGE, COMMAND, NODE:KIND); empty for eager and inductor

  /// Throws pt2diff::Error(Usage) naming the specs there are.
  static BackendSpec parse(const std::string& spec);
  /// The spec again, as parse() reads it.
  std::string str() const;
  /// A compiler run in a worker that takes Inductor config, matmul precision, TF32 settings and the
  /// compiler levers (inductor, aoti without a package, external).
  bool takes_compiler_config() const {
    return kind == Kind::Inductor || kind == Kind::External || (kind == Kind::Aoti && argument.empty());
  }
  /// It compiles for a device (--device): inductor, aoti and external workers.
  bool targets_device() const { return takes_compiler_config(); }
};

}  // namespace pt2diff
