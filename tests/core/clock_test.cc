#include "core/clock.h"

#include <gtest/gtest.h>

#include "core/mapped_file.h"

namespace smartgen::core {
namespace {

TEST(Deadline, ExpiresOnManualClock) {
  ManualClock clock(1000);
  const Deadline d = Deadline::After(Millis(5), clock);
  EXPECT_FALSE(d.Expired(clock));
  EXPECT_EQ(d.Remaining(clock), Millis(5));
  clock.Advance(Millis(5));
  EXPECT_TRUE(d.Expired(clock));
  EXPECT_EQ(d.Remaining(clock), 0);
  EXPECT_FALSE(Deadline::Never().Expired(clock));
  EXPECT_EQ(Earlier(d, Deadline::Never()).when(), d.when());
}

TEST(MappedFile, MissingFileIsNotFound) {
  auto f = MappedFile::Open("/nonexistent/smartgen/file.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  auto dir = MappedFile::Open("/tmp");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kInvalidArgument);
}

TEST(MappedFile, RoundTripsBytes) {
  const std::string path = ::testing::TempDir() + "/mapped_file_test.bin";
  ASSERT_TRUE(WriteStringToFile(path, std::string("abc\0def", 7)).ok());
  auto f = MappedFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->size(), 7u);
  EXPECT_EQ(static_cast<char>(f->bytes()[4]), 'd');
  auto s = ReadFileToString(path);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 7u);
}

}  // namespace
}  // namespace smartgen::core
