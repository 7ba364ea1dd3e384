// engine/load/archive.cpp — opens the zip, tells a PT2 archive from everything that is not one.
#include "engine/load/archive.h"
#include "graphs/regular_file.h"

#include <algorithm>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "engine/load/archive_error.h"
#include "pt2diff/error.h"

namespace pt2diff {

std::string first_line(const std::string& message) {
  std::string line = message.substr(0, message.find('\n'));
  // libtorch follows the cause with advice for its own developers ("This is an internal miniz
  // error...", "(Could this error message be improved?"): keep the first sentence.
  for (const char* tail : {". ", "  ("})
    if (size_t cut = line.find(tail, 20); cut != std::string::npos) line.resize(cut);
  return line;
}

namespace {
/// The reader refuses zips that PyTorchStreamWriter did not write (no top folder or no version
/// record). Their central directory still lists record names in plain text: enough to say what
/// the file is.
std::string classify_foreign_zip(const std::string& bytes) {
  if (bytes.find("serialized_exported_program.json") != std::string::npos)
    return "a legacy torch.export archive (written by torch < 2.8): load it with that torch and re-save it with "
           "torch 2.11-2.13 (torch.export.save(torch.export.load(old), new))";
  return "a zip file that PyTorch did not write (no version record): not a torch.export archive; save the program "
         "with torch.export.save(ep, path)";
}

std::string read_whole(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
}  // namespace

Archive::Archive(const std::string& path) : path_(path) {
  std::error_code ec;
  if (auto what = not_a_readable_file(path)) bad_archive(path, *what);
  auto size = std::filesystem::file_size(path, ec);
  if (size == 0) bad_archive(path, "empty file (0 bytes): expected an archive written by torch.export.save");
  char magic[4] = {0, 0, 0, 0};
  std::ifstream(path, std::ios::binary).read(magic, 4);
  open(std::string(magic, 4), [&] { return read_whole(path); },
       [&] { return std::make_unique<caffe2::serialize::PyTorchStreamReader>(path); });
}

Archive::Archive(std::shared_ptr<const std::string> bytes, const std::string& name) : path_(name), bytes_(std::move(bytes)) {
  PT2DIFF_CHECK(bytes_ != nullptr, "Archive from memory without bytes");
  if (bytes_->empty()) bad_archive(name, "empty (0 bytes): expected an archive written by torch.export.save");
  open(bytes_->substr(0, 4), [&] { return *bytes_; }, [&] {
    // The adapter reads the bytes in place; bytes_ outlives the reader (members are destroyed in reverse order).
    return std::make_unique<caffe2::serialize::PyTorchStreamReader>(
        std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes_->data(), static_cast<off_t>(bytes_->size())));
  });
}

void Archive::open(const std::string& head, const std::function<std::string()>& whole,
                   const std::function<std::unique_ptr<caffe2::serialize::PyTorchStreamReader>()>& make_reader) {
  const std::string& path = path_;
  bool zip_magic = head.size() >= 2 && head[0] == 'P' && head[1] == 'K';
  if (!zip_magic && !head.empty() && head[0] == '\x80')
    bad_archive(path, "a legacy (non-zip) pickle file, not a torch.export archive: save the program with torch.export.save(ep, path)");
  if (!zip_magic) bad_archive(path, "not a zip file, so not a torch.export archive: save the program with torch.export.save(ep, path)");
  try {
    reader_ = make_reader();
    records_ = reader_->getAllRecords();
  } catch (const c10::Error& e) {
    std::string cause = first_line(e.what());
    if (cause.find("failed finding central directory") == std::string::npos &&
        cause.find("failed reading zip archive") == std::string::npos)
      bad_archive(path, classify_foreign_zip(whole()));
    bad_archive(path, fmt::format("truncated or corrupt zip archive ({}): re-save it with torch.export.save", cause));
  }
  std::sort(records_.begin(), records_.end());
  if (has_record("serialized_exported_program.json") || has_record("serialized_state_dict.pt"))
    bad_archive(path, "a legacy torch.export archive (written by torch < 2.8): load it with that torch and re-save it with "
              "torch 2.11-2.13 (torch.export.save(torch.export.load(old), new))");
  if (!has_record("archive_format")) {
    if (has_record("data.pkl"))
      bad_archive(path, "a torch.save file, not a torch.export archive: pass it as INPUTS, and the graph as a .pt2 written by torch.export.save");
    if (has_record("constants.pkl") || has_record("code/__torch__.py") || has_record("data/version"))
      bad_archive(path, "a TorchScript archive (torch.jit.save), not a torch.export archive: export the model with torch.export.export and torch.export.save");
    bad_archive(path, "a zip file without 'archive_format': not a torch.export archive");
  }
  std::string format = read_text("archive_format");
  if (format != "pt2")
    bad_archive(path, fmt::format("archive_format is '{}', expected 'pt2': not a torch.export archive", format.substr(0, 40)));
  if (model_names().empty())
    bad_archive(path, "a PT2 archive without models/*.json: it holds no exported program (an AOTInductor-only package?)");
}

Archive::~Archive() = default;
Archive::Archive(Archive&&) noexcept = default;

bool Archive::has_record(const std::string& name) const {
  return std::binary_search(records_.begin(), records_.end(), name);
}

size_t Archive::record_size(const std::string& name) const {
  if (!has_record(name)) bad_archive(path_, fmt::format("missing record '{}'", name));
  return reader_->getRecordSize(name);
}

std::tuple<at::DataPtr, size_t> Archive::read_record(const std::string& name) const {
  if (!has_record(name)) bad_archive(path_, fmt::format("missing record '{}'", name));
  try {
    return reader_->getRecord(name);
  } catch (const c10::Error& e) {
    bad_archive(path_, fmt::format("cannot read record '{}' ({}): the archive is damaged", name, first_line(e.what())));
  }
}

std::string Archive::read_text(const std::string& name) const {
  auto [data, size] = read_record(name);
  return std::string(static_cast<const char*>(data.get()), size);
}

std::vector<std::string> Archive::model_names() const {
  std::vector<std::string> names;
  const std::string prefix = "models/", suffix = ".json";
  for (const std::string& r : records_)
    if (r.rfind(prefix, 0) == 0 && r.size() > prefix.size() + suffix.size() &&
        r.compare(r.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        r.find('/', prefix.size()) == std::string::npos)
      names.push_back(r.substr(prefix.size(), r.size() - prefix.size() - suffix.size()));
  return names;
}

}  // namespace pt2diff
