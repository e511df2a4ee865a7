#include "core/mapped_file.h"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace smartgen::core {
namespace {

TEST(MappedFile, MissingFileIsNotFound) {
  for (FilePlacement placement : {FilePlacement::kMapped, FilePlacement::kHugePages}) {
    auto f = MappedFile::Open("/nonexistent/smartgen/file.gguf", placement);
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
    auto dir = MappedFile::Open("/tmp", placement);
    ASSERT_FALSE(dir.ok());
    EXPECT_EQ(dir.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(MappedFile, RoundTripsBytes) {
  const std::string path = ::testing::TempDir() + "/mapped_file_test.bin";
  ASSERT_TRUE(WriteStringToFile(path, std::string("abc\0def", 7)).ok());
  auto f = MappedFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->size(), 7u);
  EXPECT_EQ(f->placement(), FilePlacement::kMapped);
  EXPECT_EQ(static_cast<char>(f->bytes()[4]), 'd');
  auto s = ReadFileToString(path);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 7u);
}

TEST(MappedFile, HugePagesHoldTheSameBytesOnAHugePageBoundary) {
  // A few MiB of distinct bytes: the copy must be whole and in order, past any single read().
  std::string data(5 * 1024 * 1024 + 13, '\0');
  std::uint32_t x = 12345;
  for (char& c : data) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);
  const std::string path = ::testing::TempDir() + "/mapped_file_huge.bin";
  ASSERT_TRUE(WriteStringToFile(path, data).ok());
  auto mapped = MappedFile::Open(path, FilePlacement::kMapped);
  auto huge = MappedFile::Open(path, FilePlacement::kHugePages);
  ASSERT_TRUE(mapped.ok() && huge.ok());
  ASSERT_EQ(huge->size(), data.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(huge->bytes().data()), huge->size()), data);
  if (!HugePagesAvailable()) {
    EXPECT_EQ(huge->placement(), FilePlacement::kMapped);  // no THP: mapped as asked otherwise
    return;
  }
  EXPECT_EQ(huge->placement(), FilePlacement::kHugePages);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(huge->bytes().data()) % PageBuffer::kHugePage, 0u);
  // Moving keeps the bytes where they are.
  const std::byte* at = huge->bytes().data();
  MappedFile moved = std::move(*huge);
  EXPECT_EQ(moved.bytes().data(), at);
  EXPECT_EQ(moved.placement(), FilePlacement::kHugePages);
  moved = std::move(*mapped);
  EXPECT_EQ(moved.placement(), FilePlacement::kMapped);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(moved.bytes().data()), moved.size()), data);
}

TEST(MappedFile, AnEmptyFileIsAnEmptySpanEitherWay) {
  const std::string path = ::testing::TempDir() + "/mapped_file_empty.bin";
  ASSERT_TRUE(WriteStringToFile(path, "").ok());
  for (FilePlacement placement : {FilePlacement::kMapped, FilePlacement::kHugePages}) {
    auto f = MappedFile::Open(path, placement);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->size(), 0u);
    EXPECT_TRUE(f->bytes().empty());
  }
}

}  // namespace
}  // namespace smartgen::core
