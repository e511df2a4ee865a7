// The transport interface: how frames move between two endpoints. Each transport lives in its
// own folder with the same shape (<name>_transport.h/.cc, <name>_connection.h/.cc):
//   tcp/       TCP sockets, epoll, one gathered writev per frame (the default)
//   ucx/       UCX UCP tag messages (tcp, shared memory, RDMA verbs: whatever UCX selects)
//   loopback/  in-process byte pipes, for tests
//   fault/     wraps any transport and injects faults deterministically
// The Endpoint (endpoint.h) runs the protocol on top; transports only move frames and answer
// capability queries, they are never switched on by name inside the engine.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"
#include "transfer/frame.h"
#include "transfer/types.h"

namespace smartgen::transfer {

using core::Deadline;

// What a transport can do; the engine and the tools ask instead of switching on names.
struct TransportCaps {
  std::string name;                     // "tcp", "ucx", "loopback", "fault(tcp)"
  bool cross_process = true;            // can reach another process (loopback: no)
  bool zero_copy_send = false;          // sends from block memory without a staging copy
  bool zero_copy_receive = false;       // receives into sink memory without a staging copy
  bool shared_memory = false;           // may move bytes through shared memory on one host
  bool rdma = false;                    // may use RDMA verbs where the host has them
  std::size_t max_payload_parts = 1024; // most payload spans one Send may gather
};

// A reliable, ordered channel of frames to one peer. A frame is a fixed 64-byte header and a
// payload given as a list of spans (gathered on send, scattered on receive).
//
// Thread-safety: one thread may Send while another receives; Send is not reentrant, nor are
// the Receive calls. Shutdown() may be called from any thread at any time.
// Errors: kUnavailable = the peer closed or reset the connection; kCancelled = Shutdown() was
// called locally; kDeadlineExceeded = the deadline passed. After any error the connection is
// unusable (a partial frame may have been sent or read) and the caller drops it.
class Connection {
 public:
  virtual ~Connection() = default;

  // Sends the header then every payload byte, in order. Without `keepalive`, returns when all
  // bytes were handed to the transport (they may still be buffered) and the spans may be reused.
  // With it, a transport that can pipeline (ucx) may return once the send is posted and keep
  // reading the payload spans until it drops its reference to `keepalive`, which the caller
  // uses to keep that memory alive (the header is always copied). A failure of such a send
  // fails the connection: a later call reports it.
  virtual Status Send(std::span<const std::byte, kFrameHeaderBytes> header,
                      std::span<const ConstBytes> payload, Deadline deadline,
                      std::shared_ptr<const void> keepalive) = 0;
  Status Send(std::span<const std::byte, kFrameHeaderBytes> header,
              std::span<const ConstBytes> payload, Deadline deadline) {
    return Send(header, payload, deadline, nullptr);
  }

  // Receives the next frame's header.
  virtual Status ReceiveHeader(std::span<std::byte, kFrameHeaderBytes> header,
                               Deadline deadline) = 0;
  // Receives the payload of the frame whose header was just received, scattering it into
  // `parts` (whose sizes sum to the header's payload_bytes). Not called when that is 0.
  virtual Status ReceivePayload(std::span<const MutableBytes> parts, Deadline deadline) = 0;

  // Closes the connection: pending and later calls fail (kCancelled), the peer sees it closed.
  // Idempotent.
  virtual void Shutdown() = 0;

  // "tcp 127.0.0.1:41000->127.0.0.1:7000", for logs and errors.
  virtual std::string Describe() const = 0;

  // The rate the transport itself measured the peer receiving at, in bytes per second (tcp: the
  // kernel's delivery rate, from ACKs, while the sender was not application-limited); 0 when
  // it has none. Any thread.
  virtual double DeliveryBytesPerSecond() const { return 0.0; }
};

class Listener {
 public:
  virtual ~Listener() = default;
  // The bound address, in the form Connect() takes (a requested port 0 is resolved).
  virtual std::string address() const = 0;
  // The next incoming connection. kDeadlineExceeded when none arrived in time; kCancelled after
  // Shutdown(). Not reentrant.
  virtual Result<std::unique_ptr<Connection>> Accept(Deadline deadline) = 0;
  // Stops listening and wakes Accept. Thread-safe, idempotent.
  virtual void Shutdown() = 0;
};

// A factory of connections. Thread-safe: Listen and Connect may be called concurrently.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual const TransportCaps& caps() const = 0;
  // Addresses are transport-specific: "host:port" for tcp and ucx, "name" for loopback.
  virtual Result<std::unique_ptr<Listener>> Listen(std::string_view address) = 0;
  virtual Result<std::unique_ptr<Connection>> Connect(std::string_view address,
                                                      Deadline deadline) = 0;
};

// Total bytes of a list of spans.
template <typename Span>
std::size_t TotalBytes(std::span<const Span> parts) {
  std::size_t n = 0;
  for (const auto& p : parts) n += p.size();
  return n;
}

}  // namespace smartgen::transfer
