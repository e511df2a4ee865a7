// Server-sent events (the text/event-stream format OpenAI streams use): writing `data:` events
// and an incremental parser for clients and tests.
//
//   data: {"id":"cmpl-1",...}\n\n   ...   data: [DONE]\n\n
//
// Pure functions and a single-owner parser (not thread-safe).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace smartgen::server {

inline constexpr std::string_view kSseDone = "[DONE]";

// One event carrying `payload` as its data ("data: <line>\n" per line of payload, then "\n").
std::string SseEvent(std::string_view payload);
// A comment line (ignored by clients; keeps idle connections alive and detects closed ones).
std::string SseComment(std::string_view text);

// Splits a byte stream into events and returns each event's data (its `data:` lines joined
// by '\n'). Accepts \n, \r\n and \r line ends, a single optional space after the colon, and
// ignores comments, other fields and events without data, as the SSE specification says.
class SseParser {
 public:
  // Feeds bytes (any split); appends the data of every event completed by them.
  void Feed(std::string_view bytes, std::vector<std::string>* events);
  // Bytes of an unfinished line or event are pending.
  bool has_partial() const { return !line_.empty() || has_data_; }

 private:
  void EndLine(std::vector<std::string>* events);

  std::string line_;
  std::string data_;
  bool has_data_ = false;
  bool last_was_cr_ = false;
};

}  // namespace smartgen::server
