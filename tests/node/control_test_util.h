// Helpers of the control-plane security tests: the bodies of signed router -> node calls made
// with the real codec (protocol.h), one signed call, and a decode stream held open in a thread
// as a router holds it.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "node/common/control_auth.h"
#include "node/common/http_rpc.h"
#include "node/common/protocol.h"

namespace smartgen::node::testing {

// The value of an unlabelled series in Prometheus text (0 when absent).
inline double CounterValue(const std::string& metrics, const std::string& name) {
  const auto at = metrics.find("\n" + name + " ");
  return at == std::string::npos ? 0 : std::stod(metrics.substr(at + name.size() + 2));
}

// The warnings logged while it lives (stderr captured), at warn level at least whatever
// SMARTGEN_LOG says, so a test can assert that a refusal was logged.
class CapturedLog {
 public:
  CapturedLog() : level_(core::GetLogLevel()) {
    if (level_ > core::LogLevel::kWarn) core::SetLogLevel(core::LogLevel::kWarn);
    ::testing::internal::CaptureStderr();
  }
  ~CapturedLog() {
    if (!taken_) Take();
  }
  // What was logged; ends the capture.
  std::string Take() {
    taken_ = true;
    std::string text = ::testing::internal::GetCapturedStderr();
    core::SetLogLevel(level_);
    return text;
  }

 private:
  core::LogLevel level_;
  bool taken_ = false;
};

// Polls `done` every 10 ms until it holds (true) or `timeout` passes (false).
inline bool WaitUntil(const std::function<bool()>& done, core::Nanos timeout) {
  const core::Deadline d = core::Deadline::After(timeout);
  while (!done()) {
    if (d.Expired()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

inline GenerationSpec TestSpec(std::vector<std::int32_t> prompt, int max_tokens) {
  GenerationSpec spec;
  spec.prompt = std::move(prompt);
  spec.max_tokens = max_tokens;
  spec.stop_at_eog = false;
  return spec;
}

inline std::string DecodeBody(const RequestId& id, const KvTicket& ticket,
                              const GenerationSpec& spec, TransferMode mode,
                              std::int64_t timeout_ms = 20000) {
  DecodeCall c;
  c.request_id = id;
  c.kv_ticket = ticket;
  c.spec = spec;
  c.mode = mode;
  c.timeout_ms = timeout_ms;
  return ToJson(c).dump();
}

inline std::string PrefillBody(const RequestId& id, const KvTicket& ticket,
                               const GenerationSpec& spec, TransferMode mode,
                               const std::string& decode_address, std::int64_t timeout_ms = 20000) {
  PrefillCall c;
  c.request_id = id;
  c.kv_ticket = ticket;
  c.spec = spec;
  c.mode = mode;
  c.decode_address = decode_address;
  c.timeout_ms = timeout_ms;
  return ToJson(c).dump();
}

// One POST signed with `token` as `caller`; the HTTP status (-1: no answer) and the body.
inline int SignedPost(int port, const std::string& path, const std::string& body,
                      const std::string& token, const std::string& caller = "",
                      std::string* reply = nullptr) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(20, 0);
  auto r = cli.Post(path, SignHeaders(token, "POST", path, body, caller), body, "application/json");
  if (r && reply) *reply = r->body;
  return r ? r->status : -1;
}

// POST /internal/decode held open on a thread, as a router holds it; the lines it got.
class HeldStream {
 public:
  HeldStream(int port, std::string body, std::string token, std::string caller)
      : thread_([this, port, body = std::move(body), token = std::move(token),
                 caller = std::move(caller)] {
          NodeAddress node;
          node.host = "127.0.0.1";
          node.port = port;
          node.token = token;
          node.caller = caller;
          auto j = ParseJsonText(body);
          if (!j.ok()) return;
          PostStream(node, "/internal/decode", *j, core::Seconds(30),
                     [this](const nlohmann::json& line) {
                       std::lock_guard<std::mutex> lock(mu_);
                       lines_.push_back(line);
                       return true;
                     })
              .IgnoreError();
        }) {}
  ~HeldStream() { Join(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // The tokens of its "token" lines, in order (after Join).
  std::vector<std::int32_t> Tokens() {
    std::vector<std::int32_t> out;
    for (const nlohmann::json& e : Events()) {
      auto ev = ParseDecodeEvent(e);
      if (ev.ok() && ev->kind == DecodeEvent::Kind::kToken) out.push_back(ev->token);
    }
    return out;
  }
  // The last line that is not a keep-alive (after Join).
  nlohmann::json Last() {
    auto all = Events();
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      if (it->value("event", "") != "alive") return *it;
    }
    return nullptr;
  }

 private:
  std::vector<nlohmann::json> Events() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  std::mutex mu_;
  std::vector<nlohmann::json> lines_;
  std::thread thread_;
};

}  // namespace smartgen::node::testing
