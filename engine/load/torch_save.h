// engine/load/torch_save.h — reading what Python's torch.save wrote (the only pickle code).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <utility>
#include <vector>
#include <string>

#include "pt2diff/inputs.h"

namespace pt2diff {

/// Reads a torch.save zip file of inputs; see load_inputs() for the accepted layouts.
UserInputs user_inputs_from_torch_save(const std::string& bytes, const std::string& where);
/// Reads a torch.save blob holding one tensor (`use_pickle` weights).
at::Tensor tensor_from_torch_save(const std::string& bytes, const std::string& where);

/// Writes a torch.save file that Python reads with torch.load(path, weights_only=True). Only tuples,
/// tensors, numbers, str and None: libtorch tags lists and dicts with TorchScript types, which
/// weights_only loading rejects. Named values travel as a tuple of (name, value) pairs.
std::string to_torch_save(const c10::IValue& tuple_of_values);
std::string to_torch_save(const std::vector<std::pair<std::string, c10::IValue>>& named);
/// The same file written to `path`, each storage's bytes from its tensor straight to the file (a region's
/// inputs for a worker can be most of the run's values: no copy of them in memory while they are written).
/// False when the file cannot be opened or a write came short (a full disk).
bool write_torch_save(const std::string& path, const std::vector<std::pair<std::string, c10::IValue>>& named);
/// Reads a torch.save file holding a list or tuple of tensors, numbers and None (a worker's outputs).
std::vector<c10::IValue> values_from_torch_save(const std::string& bytes, const std::string& where);
/// The same, read from the file at `path` a record at a time (its bytes are never all in memory at once).
std::vector<c10::IValue> values_from_torch_save_file(const std::string& path);

}  // namespace pt2diff
