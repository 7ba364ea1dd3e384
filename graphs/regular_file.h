// graphs/regular_file.h — why a path given as an archive or inputs file is not a file pt2diff can read,
// in the words a user needs ("a directory", "a character device such as /dev/null"). No torch.
#pragma once

#include <optional>
#include <string>

namespace pt2diff {

/// nullopt for a regular file (symlinks followed) that this process may read; else what it is instead:
/// "no such file", "a directory, not a file", "a character device (like /dev/null), not a file", ...
std::optional<std::string> not_a_readable_file(const std::string& path);

}  // namespace pt2diff
