// graphs/torch_save.h — reading what Python's torch.save wrote (the only pickle code).
#pragma once

#include <ATen/core/Tensor.h>
#include <string>

#include "pt2diff/inputs.h"

namespace pt2diff {

/// Reads a torch.save zip file of inputs; see load_inputs() for the accepted layouts.
UserInputs user_inputs_from_torch_save(const std::string& bytes, const std::string& where);
/// Reads a torch.save blob holding one tensor (`use_pickle` weights).
at::Tensor tensor_from_torch_save(const std::string& bytes, const std::string& where);

}  // namespace pt2diff
