#include "server/connection_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "core/log.h"

namespace smartgen::server {
namespace {

using Phase = HttpConnection::Phase;
using Io = HttpConnection::Io;

// The connection whose request this thread is serving (set by Serve around the request).
thread_local HttpConnection* t_current = nullptr;

// A complete response for the errors the poll thread answers itself (then it closes).
std::string PlainReply(int status) {
  const bool timeout = status == 408;
  const std::string body = fmt::format(
      "{{\"error\":{{\"message\":\"{}\",\"type\":\"invalid_request_error\",\"param\":null,"
      "\"code\":\"{}\"}}}}",
      timeout ? "the request head did not arrive in time" : "the request head is too large",
      timeout ? "request_timeout" : "request_header_too_large");
  return fmt::format(
      "HTTP/1.1 {} {}\r\nConnection: close\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\n\r\n{}",
      status, timeout ? "Request Timeout" : "Request Header Fields Too Large", body.size(), body);
}

}  // namespace

// httplib asks for a task queue when it starts listening and shuts it down when it stops:
// that brackets the life of the poll thread and the workers. enqueue() is called on the accept
// thread with a task that hands the socket to process_and_close_socket, which never blocks.
class ConnectionServer::Queue final : public httplib::TaskQueue {
 public:
  explicit Queue(ConnectionServer* server) : server_(server) { server_->StartThreads(); }
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { server_->StopThreads(); }

 private:
  ConnectionServer* server_;
};

ConnectionServer::ConnectionServer(ConnectionLimits limits, std::shared_ptr<const TlsContext> tls,
                                   core::MetricsRegistry* registry)
    : limits_(limits),
      tls_(std::move(tls)),
      open_gauge_(
          registry->GetGauge("smartgen_server_connections_open", "Client connections open now")),
      registry_(registry) {
  new_task_queue = [this] { return new Queue(this); };
  if (::pipe2(wake_fds_, O_NONBLOCK | O_CLOEXEC) != 0) {
    SG_LOG_ERROR("server", "pipe2 failed: the connection poll thread wakes up only on timeouts");
  }
}

ConnectionServer::~ConnectionServer() {
  stop();
  StopThreads();
  for (int fd : wake_fds_) {
    if (fd >= 0) ::close(fd);
  }
}

bool ConnectionServer::CurrentClientGone() {
  return t_current != nullptr && t_current->PeerGone();
}

void ConnectionServer::CloseCurrentAfterResponse() {
  if (t_current != nullptr) t_current->close_after_response = true;
}

void ConnectionServer::Wake() {
  if (wake_fds_[1] >= 0) {
    const char x = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fds_[1], &x, 1);
  }
}

void ConnectionServer::StartThreads() {
  std::lock_guard<std::mutex> lock(mu_);
  if (poller_.joinable()) return;
  stopping_ = false;
  poller_ = std::thread([this] { PollLoop(); });
  for (int i = 0; i < std::max(1, limits_.workers); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

void ConnectionServer::StopThreads() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  Wake();
  ready_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  std::vector<Owned> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(inbox_);
    for (Owned& c : ready_) left.push_back(std::move(c));
    ready_.clear();
  }
  for (Owned& c : left) Close(std::move(c), "shutdown");
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  SSL* ssl = nullptr;
  if (tls_) {
    ssl = tls_->NewSession();
    if (ssl == nullptr) {
      ::close(sock);
      return false;
    }
  }
  auto c = std::make_unique<HttpConnection>(sock, ssl);
  c->phase = tls_ ? Phase::kHandshake : Phase::kHead;
  c->deadline = core::NowNanos() + limits_.header_timeout;  // handshake and head
  c->poll_events = POLLIN;
  open_.fetch_add(1);
  open_gauge_.Increment();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      inbox_.push_back(std::move(c));
      c = nullptr;
    }
  }
  if (c) {
    Close(std::move(c), "shutdown");
    return false;
  }
  Wake();
  return true;
}

void ConnectionServer::Close(Owned c, const char* outcome, core::Nanos linger) {
  c->Shutdown(linger);
  c.reset();
  open_.fetch_sub(1);
  open_gauge_.Decrement();
  registry_
      ->GetCounter("smartgen_server_connections_closed_total",
                   "Client connections closed, by reason", {{"reason", outcome}})
      .Increment();
}

void ConnectionServer::PollLoop() {
  std::vector<Owned> waiting;
  std::vector<pollfd> fds;
  // One step of a waiting connection: read what it sent; hand it to a worker once its head is
  // complete. Returns a close reason, or null to keep it (ready or still waiting).
  enum class Next { kWait, kReady, kClose };
  auto step = [&](HttpConnection& c, const char** reason) {
    if (c.phase == Phase::kHandshake) {
      const Io io = c.Handshake();
      if (io == Io::kWantRead || io == Io::kWantWrite) {
        c.poll_events = io == Io::kWantRead ? POLLIN : POLLOUT;
        return Next::kWait;
      }
      if (io != Io::kProgress) {
        *reason = "tls_failed";
        return Next::kClose;
      }
      c.phase = Phase::kHead;  // the head is due by the same deadline as the handshake
    }
    const Io io = c.ReadAvailable(limits_.max_header_bytes + 1);
    if (io == Io::kClosed || io == Io::kError) {
      *reason = "client_closed";
      return Next::kClose;
    }
    c.poll_events = io == Io::kWantWrite ? POLLOUT : POLLIN;
    if (c.phase == Phase::kIdle && c.buffered() > 0) {
      c.phase = Phase::kHead;
      c.deadline = core::NowNanos() + limits_.header_timeout;
    }
    if (c.HeadComplete()) return Next::kReady;
    if (c.buffered() > limits_.max_header_bytes) {
      c.TryWrite(PlainReply(431));
      *reason = "head_too_large";
      return Next::kClose;
    }
    return Next::kWait;
  };

  while (true) {
    std::vector<Owned> incoming;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
      incoming.swap(inbox_);
    }
    std::vector<Owned> ready;
    auto handle = [&](Owned c, Next next, const char* reason) {
      if (next == Next::kWait) {
        waiting.push_back(std::move(c));
      } else if (next == Next::kReady) {
        ready.push_back(std::move(c));
      } else {
        Close(std::move(c), reason);
      }
    };
    // New and returned connections get a first step at once: a returned one may hold a
    // pipelined request already (in TLS buffers the socket's readiness does not show).
    for (Owned& c : incoming) {
      const char* reason = "closed";
      const Next next = step(*c, &reason);
      handle(std::move(c), next, reason);
    }
    // The cap on open connections: close the one idle the longest (then the slowest head).
    while (open_.load() > limits_.max_connections && !waiting.empty()) {
      auto victim =
          std::min_element(waiting.begin(), waiting.end(), [](const Owned& a, const Owned& b) {
            const bool ai = a->phase == Phase::kIdle, bi = b->phase == Phase::kIdle;
            if (ai != bi) return ai;
            return a->last_active < b->last_active;
          });
      Owned c = std::move(*victim);
      waiting.erase(victim);
      Close(std::move(c), "evicted");
    }

    fds.assign(1, pollfd{wake_fds_[0], POLLIN, 0});
    core::Nanos next_deadline = core::NowNanos() + core::Seconds(1);
    for (const Owned& c : waiting) {
      fds.push_back(pollfd{c->fd(), c->poll_events, 0});
      next_deadline = std::min(next_deadline, c->deadline);
    }
    if (ready.empty()) {
      const core::Nanos wait = std::max<core::Nanos>(0, next_deadline - core::NowNanos());
      ::poll(fds.data(), fds.size(), static_cast<int>((wait + 999'999) / 1'000'000));
    }
    if (fds[0].revents != 0) {
      char buf[256];
      while (::read(wake_fds_[0], buf, sizeof(buf)) > 0) {
      }
    }
    const core::Nanos now = core::NowNanos();
    std::vector<Owned> still;
    still.reserve(waiting.size());
    for (std::size_t i = 0; i < waiting.size(); ++i) {
      Owned c = std::move(waiting[i]);
      const char* reason = "closed";
      Next next = Next::kWait;
      if (fds[i + 1].revents != 0) next = step(*c, &reason);
      if (next == Next::kWait && now >= c->deadline) {
        if (c->phase != Phase::kIdle && c->buffered() > 0) c->TryWrite(PlainReply(408));
        next = Next::kClose;
        reason = c->phase == Phase::kIdle ? "idle_timeout" : "header_timeout";
      }
      if (next == Next::kWait) {
        still.push_back(std::move(c));
      } else {
        handle(std::move(c), next, reason);
      }
    }
    waiting.swap(still);
    if (!ready.empty()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (Owned& c : ready) {
          c->phase = Phase::kBusy;
          ready_.push_back(std::move(c));
        }
      }
      ready_cv_.notify_all();
    }
  }
  for (Owned& c : waiting) Close(std::move(c), "shutdown");
}

void ConnectionServer::WorkerLoop() {
  while (true) {
    Owned c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
      if (ready_.empty()) return;
      c = std::move(ready_.front());
      ready_.pop_front();
    }
    Serve(std::move(c));
  }
}

void ConnectionServer::Serve(Owned c) {
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping = stopping_;
  }
  const bool last = stopping || ++c->requests >= limits_.max_requests_per_connection;
  bool client_closes = false;
  bool ok;
  {
    ConnectionStream stream(c.get(), core::Deadline::After(limits_.body_timeout),
                            limits_.write_timeout);
    t_current = c.get();
    ok = process_request(stream, last, client_closes, nullptr);
    t_current = nullptr;
  }
  if (!ok || last || client_closes || c->close_after_response) {
    const core::Nanos linger = c->close_after_response ? limits_.linger : 0;
    Close(std::move(c), ok ? "closed" : "error", linger);
    return;
  }
  c->phase = Phase::kIdle;
  c->last_active = core::NowNanos();  // idle from now: a long response is not "idle the longest"
  c->deadline = c->last_active + limits_.keep_alive_timeout;
  c->poll_events = POLLIN;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      inbox_.push_back(std::move(c));
      c = nullptr;
    }
  }
  if (c) {
    Close(std::move(c), "shutdown");
    return;
  }
  Wake();
}

}  // namespace smartgen::server
