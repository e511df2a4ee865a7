// ConnectionServer: httplib::Server with the connection handling replaced, so that slow or
// hostile clients cannot starve the workers (DESIGN.md section 7; issue 11).
//
// httplib gives each accepted connection a worker thread for its whole life: a client that
// sends its headers one byte at a time, or keeps an idle keep-alive connection open, holds a
// worker. Here instead:
//   - one poll thread owns every connection that is between requests: it completes the TLS
//     handshake and gathers the request head (request line and headers) without blocking, and
//     drops a connection whose head has not arrived within `header_timeout` (408), whose head
//     is larger than `max_header_bytes` (431), or that stays idle past `keep_alive_timeout`;
//   - only a connection with a complete head is handed to one of `workers` threads, which runs
//     httplib's request processing (routing, handlers, response) on it; the body must arrive
//     within `body_timeout` of that, and each write may wait at most `write_timeout` for the
//     client to take bytes;
//   - at most `max_connections` are open: past that the connection idle the longest (or the
//     slowest head) is closed first, and a new one is refused only when all are busy.
// Handlers learn about their own connection through the static Current*() functions, which act
// on the connection of the request the calling thread serves.
//
// Use: construct, register routes, bind_to_port/bind_to_any_port, then listen_after_bind() on
// a thread of its own; stop() ends it (idle connections are closed, busy ones finish first).
// Metrics (in `registry`): smartgen_server_connections_open (gauge) and
// smartgen_server_connections_closed_total{reason}: closed (by either side after a request),
// client_closed, idle_timeout, header_timeout, head_too_large, tls_failed, evicted, error,
// shutdown.
//
// Thread-safety: as httplib::Server. Current*() only from a handler's thread.
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/metrics.h"
#include "server/http_connection.h"
#include "server/tls_context.h"

namespace smartgen::server {

struct ConnectionLimits {
  core::Nanos header_timeout = core::Seconds(10);
  core::Nanos body_timeout = core::Seconds(30);
  core::Nanos write_timeout = core::Seconds(10);
  core::Nanos keep_alive_timeout = core::Seconds(5);
  int max_connections = 512;
  std::size_t max_header_bytes = std::size_t{64} << 10;
  int max_requests_per_connection = 1000;
  int workers = 16;
  // How long a connection closed with an unread request body keeps reading (and dropping) it,
  // so that its client sees the response rather than a reset.
  core::Nanos linger = core::Seconds(1);
};

class ConnectionServer final : public httplib::Server {
 public:
  // `tls` null: plain HTTP. `registry` outlives the server.
  ConnectionServer(ConnectionLimits limits, std::shared_ptr<const TlsContext> tls,
                   core::MetricsRegistry* registry);
  ~ConnectionServer() override;

  // True when the client of the request this thread serves has closed its connection.
  static bool CurrentClientGone();
  // The connection of the request this thread serves is closed after its response (no
  // keep-alive), e.g. because its body was left unread.
  static void CloseCurrentAfterResponse();

 private:
  class Queue;  // httplib's TaskQueue: starts and stops the threads below
  friend class Queue;
  using Owned = std::unique_ptr<HttpConnection>;

  // httplib's accept loop hands every accepted socket here.
  bool process_and_close_socket(socket_t sock) override;
  void StartThreads();
  void StopThreads();
  void PollLoop();
  void WorkerLoop();
  void Serve(Owned c);
  void Close(Owned c, const char* outcome, core::Nanos linger = 0);
  void Wake();

  const ConnectionLimits limits_;
  const std::shared_ptr<const TlsContext> tls_;
  core::Gauge& open_gauge_;
  core::MetricsRegistry* registry_;

  std::mutex mu_;
  std::condition_variable ready_cv_;
  std::vector<Owned> inbox_;  // guarded by mu_: new or returned connections for the poll thread
  std::deque<Owned> ready_;   // guarded by mu_: complete heads waiting for a worker
  bool stopping_ = false;     // guarded by mu_
  std::atomic<int> open_{0};
  int wake_fds_[2] = {-1, -1};
  std::thread poller_;
  std::vector<std::thread> workers_;
};

}  // namespace smartgen::server
