#include "server/sse.h"

namespace smartgen::server {

std::string SseEvent(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  std::size_t start = 0;
  while (true) {
    const std::size_t end = payload.find('\n', start);
    out += "data: ";
    out += payload.substr(start, end == std::string_view::npos ? payload.npos : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  out += '\n';
  return out;
}

std::string SseComment(std::string_view text) {
  std::string out = ": ";
  out += text;
  out += "\n\n";
  return out;
}

void SseParser::Feed(std::string_view bytes, std::vector<std::string>* events) {
  for (char ch : bytes) {
    if (ch == '\n' && last_was_cr_) {  // the \n of a \r\n pair: the line already ended
      last_was_cr_ = false;
      continue;
    }
    last_was_cr_ = ch == '\r';
    if (ch == '\r' || ch == '\n') {
      EndLine(events);
    } else {
      line_.push_back(ch);
    }
  }
}

void SseParser::EndLine(std::vector<std::string>* events) {
  if (line_.empty()) {  // blank line: dispatch
    if (has_data_) events->push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line_.front() != ':') {
    const std::size_t colon = line_.find(':');
    const std::string_view field = std::string_view(line_).substr(0, colon);
    std::string_view value;
    if (colon != std::string::npos) {
      value = std::string_view(line_).substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      if (has_data_) data_.push_back('\n');
      data_ += value;
      has_data_ = true;
    }
  }
  line_.clear();
}

}  // namespace smartgen::server
