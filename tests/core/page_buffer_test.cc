#include "core/page_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace smartgen::core {
namespace {

// Pages of [p, p + bytes) the kernel reports resident (mincore).
std::size_t ResidentPages(const std::byte* p, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((bytes + page - 1) / page);
  EXPECT_EQ(mincore(const_cast<std::byte*>(p), bytes, v.data()), 0);
  std::size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

TEST(PageBuffer, IsZeroedAndStartsOnAHugePageBoundary) {
  PageBuffer b(3 * PageBuffer::kHugePage + 100);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), 3 * PageBuffer::kHugePage + 100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % PageBuffer::kHugePage, 0u);
  for (std::size_t i = 0; i < b.size(); i += 4093) ASSERT_EQ(b.data()[i], std::byte{0});
  b.data()[b.size() - 1] = std::byte{7};  // the whole size is writable
  EXPECT_EQ(b.span().size(), b.size());
}

TEST(PageBuffer, PrefaultMakesEveryPageResidentAndKeepsItZero) {
  const std::size_t bytes = 2 * PageBuffer::kHugePage;
  PageBuffer b(bytes);
  // A fresh anonymous mapping has no page until it is touched.
  EXPECT_EQ(ResidentPages(b.data(), bytes), 0u);
  b.Prefault();
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(ResidentPages(b.data(), bytes), bytes / page);
  for (std::size_t i = 0; i < bytes; i += 1021) ASSERT_EQ(b.data()[i], std::byte{0});
}

TEST(PageBuffer, MovesOwnershipAndAnEmptyBufferHoldsNothing) {
  PageBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  empty.Prefault();  // nothing to do
  PageBuffer zero(0);
  EXPECT_EQ(zero.data(), nullptr);
  EXPECT_EQ(zero.size(), 0u);

  PageBuffer a(1000);
  a.data()[10] = std::byte{42};
  std::byte* const p = a.data();
  PageBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the test
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[10], std::byte{42});
  PageBuffer c(10);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 1000u);
}

}  // namespace
}  // namespace smartgen::core
