// graphs/regular_file.cpp — what a path is, from stat(2).
#include "graphs/regular_file.h"

#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

namespace pt2diff {

std::optional<std::string> not_a_readable_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == EACCES) return "permission denied (a folder on its path cannot be searched)";
    return "no such file";
  }
  if (S_ISDIR(st.st_mode)) return "a directory, not a file";
  if (S_ISCHR(st.st_mode)) return "a character device (like /dev/null), not a file";
  if (S_ISBLK(st.st_mode)) return "a block device, not a file";
  if (S_ISFIFO(st.st_mode)) return "a pipe, not a file: pt2diff seeks in what it reads; save it to a file first";
  if (S_ISSOCK(st.st_mode)) return "a socket, not a file";
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (::access(path.c_str(), R_OK) != 0) return "permission denied";
  return std::nullopt;
}

}  // namespace pt2diff
