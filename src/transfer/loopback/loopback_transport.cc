#include "transfer/loopback/loopback_transport.h"

#include <chrono>

#include <fmt/format.h>

#include "transfer/loopback/loopback_connection.h"

namespace smartgen::transfer {

struct LoopbackTransport::Backlog {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<Connection>> pending;  // guarded by mu
  bool closed = false;                              // guarded by mu
};

namespace {

class LoopbackListener final : public Listener {
 public:
  LoopbackListener(std::string name, std::shared_ptr<LoopbackTransport::Backlog> backlog,
                   std::function<void()> unregister)
      : name_(std::move(name)), backlog_(std::move(backlog)), unregister_(std::move(unregister)) {}
  ~LoopbackListener() override { Shutdown(); }

  std::string address() const override { return name_; }

  Result<std::unique_ptr<Connection>> Accept(Deadline deadline) override {
    std::unique_lock<std::mutex> lock(backlog_->mu);
    while (!backlog_->closed && backlog_->pending.empty()) {
      const core::Nanos left = deadline.Remaining();
      if (left <= 0) return DeadlineExceeded("no loopback connection arrived in time");
      backlog_->cv.wait_for(lock, std::chrono::nanoseconds(std::min(left, core::Seconds(1))));
    }
    if (backlog_->closed) return Cancelled("listener shut down");
    auto connection = std::move(backlog_->pending.front());
    backlog_->pending.pop_front();
    return connection;
  }

  void Shutdown() override {
    {
      std::lock_guard<std::mutex> lock(backlog_->mu);
      if (backlog_->closed) return;
      backlog_->closed = true;
      backlog_->pending.clear();
      backlog_->cv.notify_all();
    }
    unregister_();
  }

 private:
  std::string name_;
  std::shared_ptr<LoopbackTransport::Backlog> backlog_;
  std::function<void()> unregister_;
};

}  // namespace

LoopbackTransport::LoopbackTransport(std::size_t pipe_capacity) : pipe_capacity_(pipe_capacity) {
  caps_.name = "loopback";
  caps_.cross_process = false;
  caps_.zero_copy_send = false;
  caps_.zero_copy_receive = false;
  caps_.shared_memory = true;
  caps_.max_payload_parts = 1 << 20;
}

LoopbackTransport::~LoopbackTransport() = default;

Result<std::unique_ptr<Listener>> LoopbackTransport::Listen(std::string_view address) {
  std::lock_guard<std::mutex> lock(registry_->mu);
  std::string name(address);
  if (name.empty() || name == "*") name = fmt::format("loopback-{}", registry_->next_name++);
  if (registry_->listeners.count(name)) return Unavailable("loopback address '{}' is in use", name);
  auto backlog = std::make_shared<Backlog>();
  registry_->listeners.emplace(name, backlog);
  auto unregister = [registry = registry_, name, backlog] {
    std::lock_guard<std::mutex> l(registry->mu);
    auto it = registry->listeners.find(name);
    if (it != registry->listeners.end() && it->second == backlog) registry->listeners.erase(it);
  };
  return std::unique_ptr<Listener>(new LoopbackListener(name, backlog, std::move(unregister)));
}

Result<std::unique_ptr<Connection>> LoopbackTransport::Connect(std::string_view address,
                                                               Deadline deadline) {
  std::shared_ptr<Backlog> backlog;
  {
    std::lock_guard<std::mutex> lock(registry_->mu);
    auto it = registry_->listeners.find(address);
    if (it == registry_->listeners.end()) return Unavailable("no loopback listener at '{}'", address);
    backlog = it->second;
  }
  auto [client, server] = LoopbackConnection::MakePair(pipe_capacity_, std::string(address));
  std::lock_guard<std::mutex> lock(backlog->mu);
  if (backlog->closed) return Unavailable("loopback listener '{}' closed", address);
  backlog->pending.push_back(std::move(server));
  backlog->cv.notify_all();
  return std::move(client);
}

}  // namespace smartgen::transfer
