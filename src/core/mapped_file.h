// MappedFile: a read-only memory mapping of a whole file (RAII, move-only).
//
// The mapping lives as long as the object; views into it (spans, tensor views) must not
// outlive it. Open() fails with kNotFound, kPermissionDenied or kInvalidArgument (a directory),
// never crashes; an empty file maps to an empty span.
//
// FilePlacement::kHugePages reads the file into anonymous memory on transparent huge pages
// (core::PageBuffer) instead of mapping it, where the kernel has THP on (else it maps, as
// kMapped). Memory on 4 KiB pages, mapped file or anonymous, read after a few seconds of idle
// took 15-30x its streaming time on a VM (docs/RESULTS.md, "First touch"): a serving node's
// weights are read in bursts between idle waits, so nodes keep them on huge pages.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/page_buffer.h"
#include "core/result.h"

namespace smartgen::core {

enum class FilePlacement {
  kMapped,     // the page cache's pages, mapped (shared with other processes mapping the file)
  kHugePages,  // a private copy on transparent huge pages
};

// Whether the kernel gives transparent huge pages to madvise()d memory (THP "always" or "madvise").
bool HugePagesAvailable();

class MappedFile {
 public:
  static Result<MappedFile> Open(const std::string& path,
                                 FilePlacement placement = FilePlacement::kMapped);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The bytes, writable, when Open read them into a private copy (kHugePages); else nullptr.
  std::byte* private_data() const { return copy_.data(); }
  // Where the bytes are: kHugePages only when Open read them into huge pages.
  FilePlacement placement() const {
    return copy_.data() != nullptr ? FilePlacement::kHugePages : FilePlacement::kMapped;
  }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
  PageBuffer copy_;  // the bytes, for kHugePages (data_ points into it); else empty
};

// Reads a whole file into a string (for JSON, prompts, vocab tests).
Result<std::string> ReadFileToString(const std::string& path);
// Writes `data` to `path` atomically (temp file + rename).
Status WriteStringToFile(const std::string& path, std::string_view data);

}  // namespace smartgen::core
