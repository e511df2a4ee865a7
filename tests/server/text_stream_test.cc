#include "server/text_stream.h"

#include <gtest/gtest.h>

#include "tokenizer/utf8.h"

namespace smartgen::server {
namespace {

// Feeds `text` one byte at a time and returns the deltas taken after each byte.
std::vector<std::string> ByteByByte(TextStream& s, std::string_view text) {
  std::vector<std::string> deltas;
  for (char c : text) {
    if (s.Append(std::string_view(&c, 1))) break;
    std::string d = s.TakeDelta();
    if (!d.empty()) deltas.push_back(std::move(d));
  }
  std::string rest = s.TakeRest();
  if (!rest.empty()) deltas.push_back(std::move(rest));
  return deltas;
}

TEST(TextStream, WithoutStopsEveryCompleteByteIsSentAtOnce) {
  TextStream s;
  EXPECT_FALSE(s.Append("Hel"));
  EXPECT_EQ(s.TakeDelta(), "Hel");
  EXPECT_EQ(s.TakeDelta(), "");
  EXPECT_FALSE(s.Append("lo"));
  EXPECT_EQ(s.TakeDelta(), "lo");
  EXPECT_EQ(s.text(), "Hello");
}

TEST(TextStream, HoldsBackIncompleteUtf8Characters) {
  TextStream s;
  const std::string text = "aé🚀中";
  EXPECT_EQ(ByteByByte(s, text), (std::vector<std::string>{"a", "é", "🚀", "中"}));
  EXPECT_EQ(s.text(), text);
}

TEST(TextStream, PassesInvalidBytesThrough) {
  TextStream s;
  s.Append("a\x80");  // stray continuation byte: nothing to wait for
  EXPECT_EQ(s.TakeDelta(), "a\x80");
  s.Append("\xE2\x82");  // unfinished 3-byte character: held
  EXPECT_EQ(s.TakeDelta(), "");
  s.Append("x");  // it never finishes: released with the next byte
  EXPECT_EQ(s.TakeDelta(), "\xE2\x82x");
  s.Append("\xF0\x9F");
  EXPECT_EQ(s.TakeDelta(), "");
  EXPECT_EQ(s.TakeRest(), "\xF0\x9F");  // the end releases everything
}

TEST(TextStream, StopSequenceAcrossPiecesCutsTheText) {
  TextStream s({"</end>", "STOP"});
  EXPECT_FALSE(s.Append("result: 42</"));
  EXPECT_EQ(s.TakeDelta(), "result: 42");  // "</" may start "</end>": held
  EXPECT_FALSE(s.Append("e"));
  EXPECT_EQ(s.TakeDelta(), "");
  EXPECT_TRUE(s.Append("nd> trailing"));
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.text(), "result: 42");
  EXPECT_EQ(s.TakeDelta(), "");
  EXPECT_EQ(s.TakeRest(), "");
  EXPECT_TRUE(s.Append("ignored"));
  EXPECT_EQ(s.text(), "result: 42");
}

TEST(TextStream, AFalseStartIsReleased) {
  TextStream s({"abc"});
  s.Append("xab");
  EXPECT_EQ(s.TakeDelta(), "x");
  s.Append("d");
  EXPECT_EQ(s.TakeDelta(), "abd");
  EXPECT_FALSE(s.stopped());
}

TEST(TextStream, EarliestStopWinsAndDeltasConcatenateToTheText) {
  TextStream s({"world", "o, w"});
  const auto deltas = ByteByByte(s, "Hello, world");
  std::string joined;
  for (const auto& d : deltas) joined += d;
  EXPECT_EQ(s.text(), "Hell");
  EXPECT_EQ(joined, "Hell");
}

TEST(TextStream, StopInsideAMultiByteTextKeepsDeltasValid) {
  TextStream s({"中文"});
  const auto deltas = ByteByByte(s, "ok 中国 中文 no");
  std::string joined;
  for (const auto& d : deltas) {
    EXPECT_TRUE(tokenizer::IsValidUtf8(d)) << d;
    joined += d;
  }
  EXPECT_EQ(joined, "ok 中国 ");
}

}  // namespace
}  // namespace smartgen::server
