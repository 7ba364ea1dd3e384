// engine/load/archive.h — the PT2 zip through PyTorchStreamReader, with errors a user can act on.
#pragma once

#include <c10/core/Allocator.h>
#include <functional>
#include <memory>
#include <tuple>
#include <string>
#include <vector>

namespace caffe2::serialize {
class PyTorchStreamReader;
}

namespace pt2diff {

/// An opened torch.export archive. Record names are relative to the zip's top folder (whatever it is
/// called). Opening checks that the file is a PT2 archive and not a legacy or torch.save file.
class Archive {
 public:
  /// Throws pt2diff::Error(BadArchive) naming the file and the problem.
  explicit Archive(const std::string& path);
  /// The same checks on an archive held in memory; `name` stands for the path in messages.
  Archive(std::shared_ptr<const std::string> bytes, const std::string& name);
  ~Archive();
  Archive(Archive&&) noexcept;

  const std::string& path() const { return path_; }
  const std::vector<std::string>& records() const { return records_; }
  bool has_record(const std::string& name) const;
  size_t record_size(const std::string& name) const;
  /// Whole record as bytes; throws BadArchive when it is missing.
  std::string read_text(const std::string& name) const;
  /// The names of `models/<name>.json` in the archive.
  std::vector<std::string> model_names() const;
  /// Whole record as libtorch's buffer (weights: no copy); throws BadArchive when it is missing or its
  /// zip entry is damaged (libtorch's reader throws c10::Error for that).
  std::tuple<at::DataPtr, size_t> read_record(const std::string& name) const;

 private:
  /// The checks and the reader, once `head` (the first bytes) and `whole` (all of them, read only to
  /// name a foreign zip) are known.
  void open(const std::string& head, const std::function<std::string()>& whole,
            const std::function<std::unique_ptr<caffe2::serialize::PyTorchStreamReader>()>& reader);

  std::string path_;
  std::shared_ptr<const std::string> bytes_;  ///< the archive when read from memory
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader_;
  std::vector<std::string> records_;
};

/// First line of a c10::Error message (libtorch appends a C++ backtrace users cannot use).
std::string first_line(const std::string& message);

}  // namespace pt2diff
