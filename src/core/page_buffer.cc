#include "core/page_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>
#include <utility>

namespace smartgen::core {
namespace {

#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older kernels answer EINVAL
#endif
constexpr std::size_t kSmallPage = 4096;

}  // namespace

PageBuffer::PageBuffer(std::size_t size) {
  if (size == 0) return;
  mapped_ = (size + kHugePage - 1) / kHugePage * kHugePage;
  // Map one huge page more and trim both ends to a 2 MiB boundary, so every 2 MiB of the buffer
  // can be one huge page.
  const std::size_t over = mapped_ + kHugePage;
  void* raw = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto at = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (at + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > at) munmap(raw, aligned - at);
  const std::size_t tail = at + over - (aligned + mapped_);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + mapped_), tail);
  data_ = reinterpret_cast<std::byte*>(aligned);
  size_ = size;
  madvise(data_, mapped_, MADV_HUGEPAGE);  // a hint; ignored where THP is off
}

PageBuffer::PageBuffer(PageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

PageBuffer& PageBuffer::operator=(PageBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

PageBuffer::~PageBuffer() { Release(); }

void PageBuffer::Release() {
  if (data_ != nullptr) munmap(data_, mapped_);
  data_ = nullptr;
  size_ = mapped_ = 0;
}

void PageBuffer::Prefault() {
  if (data_ == nullptr) return;
  if (madvise(data_, mapped_, MADV_POPULATE_WRITE) == 0) return;
  // The pages are zero; writing a zero byte to each makes it resident without changing it.
  volatile std::byte* p = data_;
  for (std::size_t o = 0; o < mapped_; o += kSmallPage) p[o] = std::byte{0};
}

}  // namespace smartgen::core
