// Owning, aligned byte and element buffers, and the views that borrow them.
//
// AlignedBuffer<T> owns `size` elements of trivially copyable T on a 64-byte boundary (one
// cache line, the widest SIMD load). It is move-only: copying is explicit with Copy().
// Elements are value-initialised (zero). Views are std::span<T> / std::span<const T>.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <type_traits>

namespace smartgen::core {

inline constexpr std::size_t kBufferAlignment = 64;

template <typename T>
class AlignedBuffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t size) { Resize(size); }
  AlignedBuffer(AlignedBuffer&&) noexcept = default;
  AlignedBuffer& operator=(AlignedBuffer&&) noexcept = default;

  // Reallocates to `size` zeroed elements; previous contents are discarded.
  void Resize(std::size_t size) {
    data_.reset();
    size_ = 0;
    if (size == 0) return;
    const std::size_t bytes = (size * sizeof(T) + kBufferAlignment - 1) / kBufferAlignment *
                              kBufferAlignment;
    void* p = std::aligned_alloc(kBufferAlignment, bytes);
    if (p == nullptr) throw std::bad_alloc();  // allocation failure is fatal, not a Status
    std::memset(p, 0, bytes);
    data_.reset(static_cast<T*>(p));
    size_ = size;
  }

  AlignedBuffer Copy() const {
    AlignedBuffer out(size_);
    if (size_) std::memcpy(out.data(), data(), size_ * sizeof(T));
    return out;
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::size_t size_bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return data_.get()[i]; }
  const T& operator[](std::size_t i) const { return data_.get()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

  std::span<T> span() { return {data(), size_}; }
  std::span<const T> span() const { return {data(), size_}; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  std::size_t size_ = 0;
};

using ByteBuffer = AlignedBuffer<std::byte>;

}  // namespace smartgen::core
