// The node control plane's HTTP plumbing (cpp-httplib): JSON replies, NDJSON streams, and the
// client side that calls a node with a deadline. Internal API only: errors travel as
// {"error": {"code": "UNAVAILABLE", "message": ...}} and come back as the same Status.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/metrics.h"
#include "core/result.h"
#include "node/common/control_auth.h"
#include "node/common/control_tls.h"

namespace smartgen::node {

// Writes `body` as JSON with status 200.
void ReplyJson(httplib::Response& res, const nlohmann::json& body);
// Writes {"error": {code, message}} with a status matching the code (400/429/503/504/500).
void ReplyStatus(httplib::Response& res, const Status& status);

// Lines (events) produced on one thread and written to an HTTP stream on another.
class LineQueue {
 public:
  void Push(std::string line);
  // The last line; nothing may be pushed after it.
  void Close(std::string last_line);
  // Waits up to `wait` for a line. Returns false when closed and drained.
  bool Pop(std::string* line, bool* got, core::Nanos wait);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;
  bool closed_ = false;
};

// The handler of an /internal/* route, run only for calls `verifier` accepts; any other call
// gets 401 with the reason, a warning in the log and a count in `refused`. The pointers must
// outlive the server.
httplib::Server::Handler Authenticated(RequestVerifier* verifier, core::Counter* refused,
                                       httplib::Server::Handler handler);

// The part of a node's HTTP control plane every role has: adds GET /health (always "ok") and
// GET /metrics (`metrics_text` per scrape), binds host:port (port 0: any free one), and serves
// on `thread`, returning once that thread listens (so http.stop() then ends it). Returns the
// bound port; kUnavailable when it cannot bind.
Result<int> StartNodeHttp(httplib::Server& http, const std::string& host, int port,
                          std::function<std::string()> metrics_text, std::thread* thread);

// A stream writes {"event":"alive"} after this long without a line, so its reader can use a
// short inactivity timeout to tell a hung node from a slow request.
inline constexpr core::Nanos kStreamAliveInterval = core::Seconds(1);

// Streams `queue` as the chunked NDJSON body of `res`. `on_disconnect` runs (once) if the client
// goes away before the queue is closed.
void StreamLines(httplib::Response& res, std::shared_ptr<LineQueue> queue,
                 std::function<void()> on_disconnect);

// An HTTP endpoint of a node: "host:port", the token its control plane wants (calls to it are
// signed with it, control_auth.h; empty = unsigned), the name the caller signs as, and the
// control-plane TLS to use (null or off: plain HTTP). ToString never shows the token.
struct NodeAddress {
  std::string host;
  int port = 0;
  std::string token;
  std::string caller;
  std::shared_ptr<const ControlTls> tls;
  std::string ToString() const;
};
Result<NodeAddress> ParseNodeAddress(const std::string& text);  // "http://h:p" or "h:p"

// POST path with a JSON body; the JSON reply, or the Status it carries. kUnavailable when the
// node cannot be reached; kDeadlineExceeded past `timeout`.
Result<nlohmann::json> PostJson(const NodeAddress& node, const std::string& path,
                                const nlohmann::json& body, core::Nanos timeout);
// GET path; the JSON reply.
Result<nlohmann::json> GetJson(const NodeAddress& node, const std::string& path,
                               core::Nanos timeout);
// GET path; OK when the node answered 200 (any body).
Status GetOk(const NodeAddress& node, const std::string& path, core::Nanos timeout);

class AbortableCall;
// POST path and read an NDJSON reply line by line; on_line returning false stops reading.
// OK when the stream ended normally. `timeout` bounds the connection and every read: with a
// node that writes a line at least every kStreamAliveInterval it is an inactivity timeout.
// `abort` (may be null) lets another thread end the call at once (kCancelled).
Status PostStream(const NodeAddress& node, const std::string& path, const nlohmann::json& body,
                  core::Nanos timeout, const std::function<bool(const nlohmann::json&)>& on_line,
                  AbortableCall* abort = nullptr);

// Lets one thread abort another's HTTP call to a node (its socket is shut down, the call
// returns kCancelled). Abort before or during the call; each object serves one call.
// Thread-safety: Abort from any thread.
class AbortableCall {
 public:
  void Abort();
  bool aborted() const;
  // POST with a JSON body, abortable; as PostJson otherwise.
  Result<nlohmann::json> PostJson(const NodeAddress& node, const std::string& path,
                                  const nlohmann::json& body, core::Nanos timeout);

 private:
  friend Status PostStream(const NodeAddress&, const std::string&, const nlohmann::json&,
                           core::Nanos, const std::function<bool(const nlohmann::json&)>&,
                           AbortableCall*);
  // Registers the client of the call in progress; false when already aborted.
  bool Attach(httplib::Client* client);
  void Detach();
  mutable std::mutex mu_;
  httplib::Client* client_ = nullptr;  // guarded by mu_
  bool aborted_ = false;               // guarded by mu_
};

}  // namespace smartgen::node
