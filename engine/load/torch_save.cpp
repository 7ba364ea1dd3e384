// engine/load/torch_save.cpp — torch.save files through libtorch's unpickler, which only builds
// tensors, containers and scalars (never arbitrary Python objects), sharing storages like Python.
#include "engine/load/torch_save.h"

#include <caffe2/serialize/inline_container.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <unordered_map>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/jit/serialization/storage_context.h>

#include "engine/load/archive.h"
#include "graphs/pickle_scan.h"
#include "pt2diff/error.h"
#include "pt2diff/graph.h"

namespace pt2diff {

namespace {

constexpr const char* kResave =
    "pt2diff reads torch.save files holding a flat tuple, list or str-keyed dict of tensors, Python numbers, str and None";

/// Names what the unpickler choked on and the one change to the Python that fixes it.
std::string explain_unpickle_failure(const std::string& cause) {
  if (cause.find("torch.Size") != std::string::npos)
    return "it holds a torch.Size: save tuple(size) instead";
  if (cause.find("Unknown pickler class") != std::string::npos)
    return "it holds a Python class instance (a namedtuple or dataclass?): save tuple(value) instead";
  if (cause.find("isGenericDict") != std::string::npos || cause.find("OrderedDict") != std::string::npos)
    return "it holds an OrderedDict (a state_dict?): save dict(value) instead";
  if (cause.find("_rebuild_tensor_v3") != std::string::npos)
    return "it holds a tensor of a dtype libtorch's unpickler cannot read (float8, uint16/32/64, ...): "
           "save t.to(torch.float32) and cast back in the graph if needed";
  return kResave;
}

/// Python's name for a container kind, as the user wrote it.
std::string python_kind(const c10::IValue& v) {
  if (v.isGenericDict()) return "dict";
  if (v.isList()) return "list";
  if (v.isTuple()) return "tuple";
  return v.tagKind();
}

class StringReadAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit StringReadAdapter(const std::string& data) : data_(data) {}
  size_t size() const override { return data_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= data_.size()) return 0;
    n = std::min<size_t>(n, data_.size() - pos);
    if (n > 0) std::memcpy(buf, data_.data() + pos, n);  // an empty record's buffer may be null: memcpy(nullptr, .., 0) is UB
    return n;
  }

 private:
  const std::string& data_;
};

/// "float32[4, 32]"
std::string describe_tensor(const at::Tensor& t) {
  std::string dims;
  for (int64_t d : t.sizes()) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  return fmt::format("{}[{}]", dtype_name(static_cast<DType>(t.scalar_type())), dims);
}

/// Bytes each storage's record really holds. libtorch's unpickler sizes a storage by what the pickle
/// declares (numel x itemsize) whatever its record holds, so an empty or short record (a truncated or
/// damaged file) would be read out of bounds later: a crash, or garbage that passes as numbers.
using HeldBytes = std::unordered_map<const c10::StorageImpl*, size_t>;

HeldBytes held_bytes(caffe2::serialize::PyTorchStreamReader& reader, torch::jit::DeserializationStorageContext& storages) {
  HeldBytes held;
  for (const std::string& record : reader.getAllRecords()) {
    if (record.rfind("data/", 0) != 0) continue;
    const std::string key = record.substr(5);
    if (!storages.hasStorage(key)) continue;
    const c10::Storage storage = storages.getStorage(key);
    held[storage.unsafeGetStorageImpl()] = std::min(storage.nbytes(), reader.getRecordSize(record));
  }
  return held;
}

/// Every tensor must lie inside the bytes its storage record holds (held_bytes). The walk is
/// iterative: a deeply nested container costs no stack here.
void check_storages(const c10::IValue& root, const HeldBytes& held_by_storage, const std::string& where) {
  std::vector<std::pair<const c10::IValue*, std::string>> todo = {{&root, ""}};
  while (!todo.empty()) {
    auto [v, path] = todo.back();
    todo.pop_back();
    if (v->isTuple() || v->isList()) {
      const c10::ArrayRef<c10::IValue> items = v->isTuple() ? v->toTupleRef().elements().asArrayRef() : v->toListRef();
      for (size_t i = 0; i < items.size(); ++i)
        todo.emplace_back(&items[i], path.empty() ? fmt::format("input #{}", i) : fmt::format("{}[{}]", path, i));
      continue;
    }
    if (v->isGenericDict()) {
      for (const auto& item : v->toGenericDict()) {
        const std::string key = item.key().isString() ? item.key().toStringRef() : item.key().tagKind();
        todo.emplace_back(&item.value(), path.empty() ? fmt::format("input '{}'", key) : fmt::format("{}['{}']", path, key));
      }
      continue;
    }
    if (!v->isTensor()) continue;
    const at::Tensor& t = v->toTensor();
    if (!t.defined() || t.numel() == 0) continue;
    const std::string what = path.empty() ? "the tensor" : path;
    // Reach in elements: offset + 1 + sum((size - 1) * stride), in 128 bits (sizes come from the file).
    __int128 reach = static_cast<__int128>(t.storage_offset()) + 1;
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (t.stride(d) < 0)
        throw Error(Error::Kind::BadInputs, fmt::format("{}: {} ({}) has a negative stride: the file is damaged", where, what,
                                                        describe_tensor(t)));
      reach += static_cast<__int128>(t.size(d) - 1) * t.stride(d);
    }
    const __int128 needed = reach * static_cast<__int128>(t.element_size());
    const auto it = held_by_storage.find(t.storage().unsafeGetStorageImpl());
    const size_t held = it != held_by_storage.end() ? it->second : t.storage().nbytes();
    if (needed > static_cast<__int128>(held))
      throw Error(Error::Kind::BadInputs,
                  fmt::format("{}: {} ({}) needs {} bytes of storage but its storage record holds {}: the file is truncated "
                              "or damaged; save it again with torch.save", where, what, describe_tensor(t),
                              needed > static_cast<__int128>(INT64_MAX) ? std::string("more than 2^63")
                                                                        : std::to_string(static_cast<int64_t>(needed)),
                              held));
  }
}

/// A file read where the reader asks (pread): a record at a time in memory, never the whole file.
class FileReadAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit FileReadAdapter(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0) size_ = static_cast<size_t>(st.st_size);
  }
  ~FileReadAdapter() override {
    if (fd_ >= 0) ::close(fd_);
  }
  bool is_open() const { return fd_ >= 0; }
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, static_cast<char*>(buf) + done, n - done, static_cast<off_t>(pos + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

 private:
  int fd_ = -1;
  size_t size_ = 0;
};

c10::IValue unpickle_from(const std::shared_ptr<caffe2::serialize::ReadAdapterInterface>& in, const std::string& where) {
  if (in->size() == 0) throw Error(Error::Kind::BadInputs, fmt::format("{}: empty file", where));
  char magic[2] = {0, 0};
  if (in->size() < 2 || in->read(0, magic, 2, "magic") != 2 || magic[0] != 'P' || magic[1] != 'K')
    throw Error(Error::Kind::BadInputs,
                fmt::format("{}: not a zip-format torch.save file (legacy format or not written by torch.save): "
                            "load it in Python and save it again with torch.save(obj, path)", where));
  try {
    caffe2::serialize::PyTorchStreamReader reader(in);
    if (!reader.hasRecord("data.pkl"))
      throw Error(Error::Kind::BadInputs,
                  fmt::format("{}: a zip without data.pkl, not a torch.save file (a torch.export archive goes first, "
                              "as GRAPH)", where));
    // Nesting is measured before anything is built: libtorch's containers free themselves recursively.
    {
      auto [pickle, pickle_size] = reader.getRecord("data.pkl");
      const PickleShape shape = scan_pickle({static_cast<const char*>(pickle.get()), pickle_size});
      if (shape.problem)
        throw Error(Error::Kind::BadInputs, fmt::format("{}: its pickle (data.pkl) cannot be read safely: {}: the file is damaged "
                                                        "or was not written by torch.save", where, *shape.problem));
    }
    // One storage context per file: views of one storage stay views, as in Python.
    auto storages = std::make_shared<torch::jit::DeserializationStorageContext>();
    // Storages land on the CPU, where the engine runs, whatever device saved them (map_location="cpu"):
    // inputs saved from a GPU load without a CUDA build.
    c10::IValue value = torch::jit::readArchiveAndTensors("data", "", "", std::nullopt, std::nullopt, c10::Device(c10::kCPU), reader,
                                                          torch::jit::Unpickler::defaultTypeParser, storages);
    check_storages(value, held_bytes(reader, *storages), where);
    return value;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string cause = first_line(e.what());
    std::string advice = explain_unpickle_failure(cause);
    // An OrderedDict trips an internal assert whose text ("please report a bug to PyTorch") misleads.
    if (cause.find("INTERNAL ASSERT") != std::string::npos) cause = "libtorch's unpickler rejected its contents";
    throw Error(Error::Kind::BadInputs,
                fmt::format("{}: cannot read it as inputs ({}): {}", where, cause, advice));
  }
}

c10::IValue unpickle(const std::string& bytes, const std::string& where) {
  return unpickle_from(std::make_shared<StringReadAdapter>(bytes), where);
}

InputValue to_input_value(const c10::IValue& v, const std::string& where) {
  if (v.isTensor()) return v.toTensor();
  if (v.isNone()) return std::monostate{};
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) return v.toStringRef();
  throw Error(Error::Kind::BadInputs,
              fmt::format("{} is a {}: nested containers are not graph inputs; {}", where, python_kind(v), kResave));
}

bool is_sequence(const c10::IValue& v) { return v.isTuple() || v.isList(); }

std::vector<c10::IValue> elements(const c10::IValue& v) {
  if (v.isTuple()) return v.toTupleRef().elements().vec();
  return v.toListRef().vec();
}

std::vector<std::pair<std::string, InputValue>> keyword(const c10::IValue& v, const std::string& where) {
  std::vector<std::pair<std::string, InputValue>> out;
  for (const auto& item : v.toGenericDict()) {
    if (!item.key().isString())
      throw Error(Error::Kind::BadInputs, fmt::format("{}: dict keys must be str (input names), got {}", where, item.key().tagKind()));
    std::string key = item.key().toStringRef();
    out.emplace_back(key, to_input_value(item.value(), fmt::format("{}: input '{}'", where, key)));
  }
  return out;
}

std::vector<InputValue> positional(const c10::IValue& v, const std::string& where) {
  std::vector<InputValue> out;
  auto items = elements(v);
  for (size_t i = 0; i < items.size(); ++i) out.push_back(to_input_value(items[i], fmt::format("{}: input #{}", where, i)));
  return out;
}

}  // namespace

UserInputs user_inputs_from_torch_save(const std::string& bytes, const std::string& where) {
  c10::IValue root = unpickle(bytes, where);
  UserInputs in;
  in.origin = where;
  if (root.isTensor()) {
    in.args.push_back(root.toTensor());
  } else if (root.isGenericDict()) {
    in.kwargs = keyword(root, where);
  } else if (is_sequence(root)) {
    auto items = elements(root);
    // torch.export's sample inputs: (args_tuple, kwargs_dict).
    if (items.size() == 2 && is_sequence(items[0]) && items[1].isGenericDict()) {
      in.args = positional(items[0], where);
      in.kwargs = keyword(items[1], where);
    } else {
      in.args = positional(root, where);
    }
  } else {
    throw Error(Error::Kind::BadInputs,
                fmt::format("{}: holds a {} at the top; {}", where, python_kind(root), kResave));
  }
  return in;
}

at::Tensor tensor_from_torch_save(const std::string& bytes, const std::string& where) {
  c10::IValue v = unpickle(bytes, where);
  if (!v.isTensor())
    throw Error(Error::Kind::BadArchive, fmt::format("{}: expected a pickled tensor, found a {}", where, v.tagKind()));
  return v.toTensor();
}

namespace {

/// `v` with every tensor on the host: files hold CPU tensors, whatever device the runs used (a reader
/// maps them where it runs).
c10::IValue on_host(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().defined() && !v.toTensor().device().is_cpu() ? c10::IValue(v.toTensor().cpu()) : v;
  if (v.isTuple()) {
    std::vector<c10::IValue> items;
    for (const c10::IValue& item : v.toTupleRef().elements()) items.push_back(on_host(item));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& t : v.toTensorVector()) list.push_back(t.defined() ? t.cpu() : t);
    return list;
  }
  return v;
}

}  // namespace

std::string to_torch_save(const c10::IValue& value) {
  std::vector<char> bytes = torch::jit::pickle_save(on_host(value));
  return std::string(bytes.begin(), bytes.end());
}

namespace {

c10::IValue named_tuple(const std::vector<std::pair<std::string, c10::IValue>>& named) {
  std::vector<c10::IValue> pairs;
  for (const auto& [name, value] : named) pairs.push_back(c10::ivalue::Tuple::create({c10::IValue(name), value}));
  return on_host(c10::ivalue::Tuple::create(std::move(pairs)));
}

}  // namespace

std::string to_torch_save(const std::vector<std::pair<std::string, c10::IValue>>& named) {
  return to_torch_save(named_tuple(named));
}

bool write_torch_save(const std::string& path, const std::vector<std::pair<std::string, c10::IValue>>& named) {
  // torch::jit::pickle_save's layout (the pickle, then data/0, data/1, ... one record per storage, then data.pkl),
  // each storage's bytes written from the tensor to the file.
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* bytes, size_t size) { pickle.insert(pickle.end(), bytes, bytes + size); });
  pickler.protocol();
  pickler.pushIValue(named_tuple(named));
  pickler.stop();
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) return false;
  bool ok = true;
  try {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, size_t size) {
      const size_t written = size == 0 ? 0 : std::fwrite(bytes, 1, size, file.get());
      ok = ok && written == size;
      return written;
    });
    size_t i = 0;
    for (const at::Tensor& t : pickler.tensorData()) {
      const torch::jit::WriteableTensorData data = torch::jit::getWriteableTensorData(t);
      writer.writeRecord("data/" + std::to_string(i++), data.data(), data.sizeInBytes());
    }
    writer.writeRecord("data.pkl", pickle.data(), pickle.size());
    writer.writeEndOfFile();
  } catch (const std::exception&) {
    return false;  // the writer throws once a write came short
  }
  return ok && std::fflush(file.get()) == 0 && std::ferror(file.get()) == 0;
}

namespace {

std::vector<c10::IValue> values_of(const c10::IValue& root, const std::string& where) {
  if (!is_sequence(root))
    throw Error(Error::Kind::BadInputs, fmt::format("{}: holds a {}, expected a list of values", where, python_kind(root)));
  return elements(root);
}

}  // namespace

std::vector<c10::IValue> values_from_torch_save(const std::string& bytes, const std::string& where) {
  return values_of(unpickle(bytes, where), where);
}

std::vector<c10::IValue> values_from_torch_save_file(const std::string& path) {
  auto in = std::make_shared<FileReadAdapter>(path);
  if (!in->is_open()) throw Error(Error::Kind::BadInputs, fmt::format("{}: cannot open it: {}", path, std::strerror(errno)));
  return values_of(unpickle_from(in, path), path);
}

}  // namespace pt2diff
