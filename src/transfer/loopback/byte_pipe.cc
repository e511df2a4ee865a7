#include "transfer/loopback/byte_pipe.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace smartgen::transfer {
namespace {

// Waits on `cv` until `ready` or the deadline; false on deadline.
template <typename Pred>
bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               core::Deadline deadline, Pred ready) {
  while (!ready()) {
    const core::Nanos left = deadline.Remaining();
    if (left <= 0) return false;
    cv.wait_for(lock, std::chrono::nanoseconds(std::min<core::Nanos>(left, core::Seconds(1))));
  }
  return true;
}

}  // namespace

BytePipe::BytePipe(std::size_t capacity) : ring_(std::max<std::size_t>(capacity, 4096)) {}

Status BytePipe::Write(std::span<const ConstBytes> parts, core::Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  for (ConstBytes part : parts) {
    while (!part.empty()) {
      const bool ok = WaitUntil(writable_, lock, deadline, [&] {
        return writer_closed_ || reader_closed_ || size_ < ring_.size();
      });
      if (writer_closed_) return Cancelled("connection shut down");
      if (reader_closed_) return Unavailable("loopback peer closed the connection");
      if (!ok) return DeadlineExceeded("loopback send timed out (peer not reading)");
      const std::size_t tail = (head_ + size_) % ring_.size();
      const std::size_t n =
          std::min({part.size(), ring_.size() - size_, ring_.size() - tail});
      std::memcpy(ring_.data() + tail, part.data(), n);
      size_ += n;
      part = part.subspan(n);
      readable_.notify_one();
    }
  }
  return Status::Ok();
}

Status BytePipe::Read(std::span<const MutableBytes> parts, core::Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  for (MutableBytes part : parts) {
    while (!part.empty()) {
      const bool ok = WaitUntil(readable_, lock, deadline,
                                [&] { return reader_closed_ || writer_closed_ || size_ > 0; });
      if (reader_closed_) return Cancelled("connection shut down");
      if (size_ == 0) {
        if (writer_closed_) return Unavailable("loopback peer closed the connection");
        if (!ok) return DeadlineExceeded("loopback receive timed out");
        continue;
      }
      const std::size_t n = std::min({part.size(), size_, ring_.size() - head_});
      std::memcpy(part.data(), ring_.data() + head_, n);
      head_ = (head_ + n) % ring_.size();
      size_ -= n;
      part = part.subspan(n);
      writable_.notify_one();
    }
  }
  return Status::Ok();
}

void BytePipe::CloseWriter() {
  std::lock_guard<std::mutex> lock(mu_);
  writer_closed_ = true;
  readable_.notify_all();
  writable_.notify_all();
}

void BytePipe::CloseReader() {
  std::lock_guard<std::mutex> lock(mu_);
  reader_closed_ = true;
  readable_.notify_all();
  writable_.notify_all();
}

}  // namespace smartgen::transfer
