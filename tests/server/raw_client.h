// RawClient: a plain TCP client for the server tests that need to misbehave on purpose (slow
// heads, bodies that never end, hanging up at a chosen moment). Every read has a deadline.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/clock.h"

namespace smartgen::server::testing {

class RawClient {
 public:
  // Connects to 127.0.0.1:port; connected() says whether it worked.
  explicit RawClient(int port);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Sends all of `bytes`; false when the server closed or reset the connection.
  bool Send(std::string_view bytes);
  // Reads until `pred(received)` holds, the server closes, or `timeout` passes; returns
  // everything received so far (also kept in received()).
  std::string ReadUntil(const std::function<bool(const std::string&)>& pred,
                        core::Nanos timeout = core::Seconds(5));
  // Reads until the server closes the connection (or `timeout`); true if it closed.
  bool ReadUntilClosed(core::Nanos timeout = core::Seconds(5));
  const std::string& received() const { return received_; }
  void Close();

 private:
  int fd_ = -1;
  std::string received_;
};

// A request head for `method path` with extra header lines (each ending in \r\n).
std::string RequestHead(std::string_view method, std::string_view path,
                        std::string_view extra_headers = "");
// The status code of the first response in `raw` (0 if none yet).
int StatusOf(const std::string& raw);

}  // namespace smartgen::server::testing
