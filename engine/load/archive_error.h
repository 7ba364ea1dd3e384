// engine/load/archive_error.h — the loaders' one way to refuse an archive: pt2diff::Error(BadArchive), "WHERE: WHAT".
#pragma once

#include <string>

#include "pt2diff/error.h"

namespace pt2diff {

/// Throws Error(Kind::BadArchive) with "`where`: `what`" (`where`: the archive's path or the part of it read).
[[noreturn]] inline void bad_archive(const std::string& where, const std::string& what) {
  throw Error(Error::Kind::BadArchive, where + ": " + what);
}

}  // namespace pt2diff
