#include "server/sse.h"

#include <gtest/gtest.h>

namespace smartgen::server {
namespace {

TEST(Sse, EventFormat) {
  EXPECT_EQ(SseEvent("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(SseEvent(kSseDone), "data: [DONE]\n\n");
  EXPECT_EQ(SseEvent("two\nlines"), "data: two\ndata: lines\n\n");
  EXPECT_EQ(SseComment("keep-alive"), ": keep-alive\n\n");
}

TEST(Sse, ParserHandlesAnySplitAndLineEnding) {
  const std::string stream = SseEvent("first") + SseComment("ping") + "data:second\r\n\r\n" +
                             "event: x\ndata: a\ndata: b\n\n" + "id: 3\n\n" + SseEvent("[DONE]");
  for (std::size_t split = 0; split <= stream.size(); ++split) {
    SseParser parser;
    std::vector<std::string> events;
    parser.Feed(stream.substr(0, split), &events);
    parser.Feed(stream.substr(split), &events);
    EXPECT_EQ(events, (std::vector<std::string>{"first", "second", "a\nb", "[DONE]"}))
        << "split at " << split;
    EXPECT_FALSE(parser.has_partial());
  }
  SseParser parser;
  std::vector<std::string> events;
  parser.Feed("data: x\rdata: y\r\r", &events);
  EXPECT_EQ(events, (std::vector<std::string>{"x\ny"}));
  parser.Feed("data: unfinished\n", &events);
  EXPECT_TRUE(parser.has_partial());
  EXPECT_EQ(events.size(), 1u);
}

}  // namespace
}  // namespace smartgen::server
