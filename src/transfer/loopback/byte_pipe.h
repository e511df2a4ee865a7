// A bounded in-process byte pipe (ring buffer) with blocking, deadline-bounded reads and writes:
// one direction of a loopback connection. Its capacity bounds how many bytes can be "on the
// wire" at once, like a socket buffer.
//
// Thread-safety: one writer thread and one reader thread; Close* from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <span>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "transfer/types.h"

namespace smartgen::transfer {

class BytePipe {
 public:
  explicit BytePipe(std::size_t capacity);

  // Writes every byte of `parts`, blocking while the pipe is full. kCancelled after
  // CloseWriter(), kUnavailable after CloseReader() (the reader went away).
  Status Write(std::span<const ConstBytes> parts, core::Deadline deadline);
  // Fills every byte of `parts`, blocking while empty. kCancelled after CloseReader(),
  // kUnavailable once the writer closed and the pipe is drained.
  Status Read(std::span<const MutableBytes> parts, core::Deadline deadline);

  void CloseWriter();
  void CloseReader();

 private:
  std::mutex mu_;
  std::condition_variable readable_;
  std::condition_variable writable_;
  std::vector<std::byte> ring_;
  std::size_t head_ = 0;  // first unread byte
  std::size_t size_ = 0;  // unread bytes
  bool writer_closed_ = false;
  bool reader_closed_ = false;
};

}  // namespace smartgen::transfer
