// HttpConnection: one accepted connection of the public HTTP front (plain TCP or TLS), and
// ConnectionStream, the httplib::Stream a worker reads one request from and writes its response
// to. The socket is non-blocking throughout: the connection server's poll thread performs the
// TLS handshake and gathers the request head without ever blocking on a slow client; a worker
// then serves the request with waits bounded by deadlines (connection_server.h).
//
// Ownership: the connection owns its socket and its SSL session (closed and freed by the
// destructor). It is owned by exactly one thread at a time (poll thread or a worker); handing
// it over through a mutex-guarded queue is what orders the accesses. Not thread-safe otherwise,
// except PeerGone(), which only polls the socket.
#pragma once

#include <httplib.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "core/clock.h"

typedef struct ssl_st SSL;

namespace smartgen::server {

class HttpConnection {
 public:
  // What a non-blocking step did.
  enum class Io {
    kProgress,   // done (handshake complete, or bytes were read)
    kWantRead,   // wait for the socket to be readable, then call again
    kWantWrite,  // wait for it to be writable (TLS), then call again
    kClosed,     // the peer closed the connection
    kError,      // a socket or TLS error: drop the connection
  };
  // Where the connection is in its life (kept by the connection server).
  enum class Phase { kHandshake, kIdle, kHead, kBusy };

  // Takes ownership of `fd` (made non-blocking here) and of `ssl` (null for plain TCP; else a
  // fresh server session, which is bound to `fd` here).
  HttpConnection(int fd, SSL* ssl);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  int fd() const { return fd_; }
  bool tls() const { return ssl_ != nullptr; }

  // Non-blocking (poll thread). TLS handshake step; kProgress at once for plain TCP.
  Io Handshake();
  // Reads what is available into the input buffer (at most `limit` bytes buffered in all).
  // kProgress when bytes were read, kWantRead/kWantWrite when none were available yet.
  Io ReadAvailable(std::size_t limit);
  // True when the buffered input holds a whole request head (request line, headers, CRLF).
  bool HeadComplete() const;
  std::size_t buffered() const { return in_.size() - in_off_; }
  // Writes what the socket takes now, without waiting (short error replies); best effort.
  void TryWrite(std::string_view bytes);

  // Blocking with a deadline (worker). Buffered input first, then the socket. Bytes read
  // (> 0), 0 at the end of the stream, -1 on error or when `deadline` passes first.
  ssize_t Read(char* dst, std::size_t n, const core::Deadline& deadline);
  // Writes all of `bytes`, waiting at most `progress_timeout` each time the socket is full.
  // False when the peer is gone or stopped reading for that long.
  bool WriteAll(const char* bytes, std::size_t n, core::Nanos progress_timeout);
  // True when the peer has closed (or reset) its side, seen without reading any data.
  bool PeerGone() const;
  // Ends the connection gracefully before destruction: TLS close_notify, our FIN, then reads
  // and drops whatever the peer still sends (an unread request body) for up to `linger`, so
  // that the peer reads our response before it sees a reset.
  void Shutdown(core::Nanos linger);

  // Bookkeeping of the connection server (owned with the connection).
  Phase phase = Phase::kHandshake;
  core::Nanos deadline = 0;           // steady clock; when the current phase times out
  core::Nanos last_active = 0;        // steady clock; for choosing what to evict first
  short poll_events = 0;              // what the poll thread waits for
  int requests = 0;                   // served on this connection
  bool close_after_response = false;  // set by a handler (e.g. an unread body): no keep-alive

 private:
  // Waits until the socket is readable (or writable) or the deadline; false on timeout/error.
  bool Wait(short events, const core::Deadline& deadline) const;
  ssize_t RecvSome(char* dst, std::size_t n, Io* io);
  ssize_t SendSome(const char* src, std::size_t n, Io* io);

  int fd_;
  SSL* ssl_;
  std::string in_;  // buffered input not yet consumed from in_off_
  std::size_t in_off_ = 0;
};

// The httplib::Stream over one connection, for one request: reads time out at `read_deadline`
// (the request's head is already buffered; this bounds the body), each write waits at most
// `write_timeout` for the client to take bytes.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(HttpConnection* connection, core::Deadline read_deadline,
                   core::Nanos write_timeout)
      : c_(connection), read_deadline_(read_deadline), write_timeout_(write_timeout) {}

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  // httplib only compares this with FD_SETSIZE (it was built to select() on its own sockets,
  // which it never does on ours): a descriptor past that range reads as 0.
  socket_t socket() const override;

 private:
  HttpConnection* c_;
  core::Deadline read_deadline_;
  core::Nanos write_timeout_;
  bool failed_ = false;
};

}  // namespace smartgen::server
