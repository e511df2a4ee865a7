#include "core/status.h"

#include <cerrno>

#include <gtest/gtest.h>

#include "core/result.h"

namespace smartgen {
namespace {

Result<int> ParsePositive(int x) {
  if (x <= 0) return InvalidArgument("{} is not positive", x);
  return x;
}

Result<int> DoubleIt(int x) {
  SG_ASSIGN_OR_RETURN(int v, ParsePositive(x));
  return 2 * v;
}

Status CheckBoth(int a, int b) {
  SG_RETURN_IF_ERROR(ParsePositive(a).status());
  SG_RETURN_IF_ERROR(ParsePositive(b).status());
  return Status::Ok();
}

TEST(Status, OkByDefaultAndFormatsErrors) {
  EXPECT_TRUE(Status().ok());
  const Status s = OutOfRange("prompt has {} tokens, context is {}", 5000, 4096);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s.ToString(), "OUT_OF_RANGE: prompt has 5000 tokens, context is 4096");
  EXPECT_EQ(s.WithContext("request 7").message(), "request 7: prompt has 5000 tokens, context is 4096");
}

TEST(Status, RetryableCodesAreTransientOnes) {
  EXPECT_TRUE(IsRetryable(StatusCode::kUnavailable));
  EXPECT_TRUE(IsRetryable(StatusCode::kDeadlineExceeded));
  EXPECT_FALSE(IsRetryable(StatusCode::kInvalidArgument));
  EXPECT_FALSE(IsRetryable(StatusCode::kDataLoss));
}

TEST(Status, ErrnoMapsToActionableCodes) {
  EXPECT_EQ(ErrnoStatus(ENOENT, "open x").code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoStatus(ECONNRESET, "recv").code(), StatusCode::kUnavailable);
  EXPECT_NE(ErrnoStatus(ENOENT, "open x").message().find("open x"), std::string_view::npos);
}

TEST(Result, PropagatesValuesAndErrors) {
  EXPECT_EQ(DoubleIt(4).value(), 8);
  const auto bad = DoubleIt(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.value_or(42), 42);
  EXPECT_TRUE(CheckBoth(1, 2).ok());
  EXPECT_EQ(CheckBoth(1, -2).message(), "-2 is not positive");
}

TEST(Result, OkStatusWithoutValueBecomesInternalError) {
  const Result<int> r(Status::Ok());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace smartgen
