// FuzzFile: the fuzzer's input as a file, for parsers that take a path (GGUF maps its file;
// the config reader opens one). An in-memory file (memfd) rewritten per input: no disk I/O,
// nothing left behind.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace smartgen::fuzz {

class FuzzFile {
 public:
  FuzzFile() : fd_(::memfd_create("smartgen-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
  }
  ~FuzzFile() { ::close(fd_); }
  // Replaces the file's contents with `data` and returns a path that opens it.
  std::string Write(const std::uint8_t* data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, data, size, 0) != static_cast<ssize_t>(size)) {
      std::perror("memfd write");
      std::abort();
    }
    return "/proc/self/fd/" + std::to_string(fd_);
  }

 private:
  int fd_;
};

}  // namespace smartgen::fuzz
