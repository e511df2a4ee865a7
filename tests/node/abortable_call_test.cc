// AbortableCall: another thread ends a node call that is in flight (the router does this when a
// request's other half fails), before it starts, and never after it ended.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "core/clock.h"
#include "node/common/http_rpc.h"

namespace smartgen::node {
namespace {

// A loopback node whose POST /hang holds every call until released (or 30 s pass), and counts
// the calls that reached it.
class HangingNode {
 public:
  HangingNode() {
    http_.Post("/hang", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu_);
      ++arrived_;
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::seconds(30), [this] { return released_; });
      ReplyJson(res, {{"ok", true}});
    });
    http_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      ReplyJson(res, nlohmann::json::parse(req.body));
    });
    auto port = StartNodeHttp(http_, "127.0.0.1", 0, [] { return std::string(); }, &thread_);
    EXPECT_TRUE(port.ok()) << port.status().ToString();
    address_.host = "127.0.0.1";
    address_.port = port.ok() ? *port : 0;
  }
  ~HangingNode() {
    Release();
    http_.stop();
    if (thread_.joinable()) thread_.join();
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Waits (up to 10 s) until `n` calls have reached the handler.
  bool WaitArrived(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return arrived_ >= n; });
  }
  const NodeAddress& address() const { return address_; }

 private:
  httplib::Server http_;
  std::thread thread_;
  NodeAddress address_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;        // guarded by mu_
  bool released_ = false;  // guarded by mu_
};

TEST(AbortableCall, AbortEndsACallInFlightAtOnce) {
  HangingNode node;
  AbortableCall call;
  Result<nlohmann::json> reply = nlohmann::json();
  const core::Stopwatch watch;
  std::thread caller([&] { reply = call.PostJson(node.address(), "/hang", {{"x", 1}}, core::Seconds(20)); });
  ASSERT_TRUE(node.WaitArrived(1));  // the request is on the wire: the client is attached
  call.Abort();
  caller.join();
  EXPECT_EQ(reply.status().code(), StatusCode::kCancelled) << reply.status().ToString();
  EXPECT_LT(watch.ElapsedSeconds(), 10.0) << "the abort did not end the call";
  EXPECT_TRUE(call.aborted());
}

TEST(AbortableCall, AbortBeforeTheCallRefusesIt) {
  HangingNode node;
  AbortableCall call;
  call.Abort();
  auto reply = call.PostJson(node.address(), "/echo", {{"x", 1}}, core::Seconds(5));
  EXPECT_EQ(reply.status().code(), StatusCode::kCancelled);
}

TEST(AbortableCall, ACallThatEndedKeepsItsReplyAndALateAbortTouchesNothing) {
  HangingNode node;
  AbortableCall call;
  auto reply = call.PostJson(node.address(), "/echo", {{"x", 7}}, core::Seconds(5));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ((*reply)["x"], 7);
  call.Abort();  // the client is gone: must not touch it
  EXPECT_TRUE(call.aborted());
}

}  // namespace
}  // namespace smartgen::node
