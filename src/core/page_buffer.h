// PageBuffer: zeroed anonymous memory on its own mapping, for large long-lived buffers (the KV
// block pool's chunks, a transfer store's requests).
//
// The mapping starts on a 2 MiB boundary and asks for transparent huge pages (a hint; ignored
// where THP is off), so a large buffer costs one page fault and one TLB entry per 2 MiB instead
// of per 4 KiB. Prefault() touches every page at once: memory the kernel hands out lazily costs a
// fault on its first write, 0.2-1 us per 4 KiB page on bare metal and 12-15 us on a VM whose host
// backs guest memory lazily (docs/RESULTS.md, "First touch"), which a request must not pay on its
// way to token 1 or 2. Move-only; allocation failure throws std::bad_alloc, like AlignedBuffer.
#pragma once

#include <cstddef>
#include <span>

namespace smartgen::core {

class PageBuffer {
 public:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

  PageBuffer() = default;
  explicit PageBuffer(std::size_t size);
  PageBuffer(PageBuffer&& other) noexcept;
  PageBuffer& operator=(PageBuffer&& other) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  ~PageBuffer();

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::span<std::byte> span() const { return {data_, size_}; }

  // Makes every page of the buffer resident now (MADV_POPULATE_WRITE where the kernel has it,
  // else one write per page); the contents stay zero.
  void Prefault();

 private:
  void Release();

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;  // whole huge pages
};

}  // namespace smartgen::core
