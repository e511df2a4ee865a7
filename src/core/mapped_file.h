// MappedFile: a read-only memory mapping of a whole file (RAII, move-only).
//
// The mapping lives as long as the object; views into it (spans, tensor views) must not
// outlive it. Open() fails with kNotFound, kPermissionDenied or kInvalidArgument (a directory),
// never crashes; an empty file maps to an empty span.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/result.h"

namespace smartgen::core {

class MappedFile {
 public:
  static Result<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

// Reads a whole file into a string (for JSON, prompts, vocab tests).
Result<std::string> ReadFileToString(const std::string& path);
// Writes `data` to `path` atomically (temp file + rename).
Status WriteStringToFile(const std::string& path, std::string_view data);

}  // namespace smartgen::core
