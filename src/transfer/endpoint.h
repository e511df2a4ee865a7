// Endpoint: the whole public API of the transfer engine (one per node, like a NIXL agent).
//
//   auto ep = Endpoint::Create(config, transport, &source, &sink, callbacks);
//   ep->Listen("0.0.0.0:7000")            or   PeerId peer = ep->Connect("prefill:7000", d)
//   TransferHandle h = ep->Post(peer, {Direction::kPull, Priority::kOnDemand, ranges, d});
//   ep->Poll(h) -> TransferProgress{kInProgress|kDone|kFailed|kCancelled, ...}; ep->Wait(h, d)
//
// Connections start with a versioned handshake (handshake.h). Each connected peer gets a
// sender thread, which always sends control frames first and then data frames of the highest
// priority class that has one (a frame is a run of adjacent blocks of at most max_frame_bytes,
// so a more urgent transfer waits at most one frame), rate-limited by link.gbps; and a receiver
// thread, which scatters blocks straight into the BlockSink, verifies each frame's checksum and
// reports blocks ready only after it passed.
//
// Guarantees:
//  - Every transfer ends (kDone, kFailed or kCancelled) by its deadline; a dead peer (closed,
//    reset, or silent for heartbeat_timeout) fails its transfers with kUnavailable (retryable).
//  - A corrupt frame's blocks are rejected and sent again (pull: re-requested; push: the
//    receiver NACKs); duplicates and blocks of cancelled transfers or older generations are
//    dropped, never written over a present block, and counted (Metrics).
//  - A frame or answer that goes missing (no ack, no progress for retransmit_timeout) is sent
//    or asked for again; a range that keeps failing ends its transfer after max_attempts.
//    While the peer keeps acknowledging other ranges, a pushed range waits longer (8 timeouts)
//    before it is sent again: on a slow link it is queued, not lost.
//  - The sending side holds each request's KV under a lease: BlockSource::Release is called
//    once (on the callback thread), on FinishRequest from the peer or ReleaseLease (completed),
//    CancelRequest on either side (cancelled), or when no transfer touched the request for
//    lease_ttl (expired).
//  - Preemption is at frame boundaries in the engine; bytes already in a transport's buffers
//    (a TCP socket buffer filled by a receiver that falls behind) cannot be overtaken.
//
// Threading: every method is thread-safe. Callbacks run on one internal callback thread, in
// order, without engine locks held, and may call any Endpoint method (even Wait); a slow callback
// delays later callbacks only. BlockSource/BlockSink calls run on sender/receiver threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "transfer/block_io.h"
#include "transfer/handshake.h"
#include "transfer/metrics.h"
#include "transfer/transport.h"
#include "transfer/types.h"

namespace smartgen::transfer {

// An emulated link: every byte sent goes through a token bucket (rate_limiter.h).
struct LinkConfig {
  double gbps = 0;                // 0 = unshaped
  std::uint64_t bucket_bytes = 0; // 0 = max(64 KiB, 5 ms at the rate); frames are <= 1/4 of it
  core::Nanos latency = 0;        // one-way delay added to every received frame
};

struct EndpointConfig {
  std::string name = "endpoint";  // for logs
  HandshakeParams handshake;      // must match the peer's
  std::string token;              // shared secret, must match the peer's
  LinkConfig link;

  std::size_t max_frame_bytes = 1 << 20;  // payload cap of one data frame (>= one block)
  core::Nanos handshake_timeout = core::Seconds(5);
  core::Nanos heartbeat_interval = core::Millis(250);  // idle links send a heartbeat this often
  core::Nanos heartbeat_timeout = core::Seconds(3);    // silence after which the peer is dead
  core::Nanos retransmit_timeout = core::Seconds(1);   // no ack / no progress: send/ask again
  int max_attempts = 8;                          // sends of one range before the transfer fails
  core::Nanos default_timeout = core::Seconds(60);  // deadline of a transfer posted without one
  core::Nanos lease_ttl = core::Seconds(30);        // idle time after which a lease expires
  core::Nanos source_retry = core::Millis(2);   // backoff after BlockSource said kUnavailable
  core::Nanos retention = core::Seconds(10);    // finished transfers stay pollable this long
};

struct EndpointCallbacks {
  // A transfer reached a terminal state (status OK when kDone).
  std::function<void(TransferHandle, const Status&)> on_transfer_done;
  // A control message from the peer (SendControl).
  std::function<void(PeerId, std::uint32_t type, ConstBytes bytes)> on_control;
  // The same message, earlier: on the peer's receiver thread as its frame is read, before any
  // later frame of that peer (a data frame's BlockSink::Admit included) and before on_control,
  // which runs on a callback thread after the emulated link latency. For what must be in order
  // with the peer's data (binding a request to its link); quick, and never blocking.
  std::function<void(PeerId, std::uint32_t type, ConstBytes bytes)> on_control_arrived;
  // A peer completed the handshake (Connect or an accepted connection).
  std::function<void(PeerId)> on_peer_connected;
  // A peer's connection ended; its transfers failed with `why`.
  std::function<void(PeerId, const Status& why)> on_peer_down;
};

struct TransferRequest {
  Direction direction = Direction::kPull;
  Priority priority = Priority::kOnDemand;
  std::vector<BlockRange> ranges;        // non-empty; blocks may repeat across ranges
  Deadline deadline = Deadline::Never(); // Never(): now + default_timeout
  // kInt8: approximate copies, about half the bytes (transfer/int8_wire.h); the sink is told.
  WireFormat wire = WireFormat::kNative;
};

class Endpoint {
 public:
  static constexpr std::size_t kAcceptBacklog = 1024;
  // `source` (may be null: no pushes, pulls refused) and `sink` (may be null: no pulls, pushes
  // refused) must outlive the Endpoint. kInvalidArgument for a bad config.
  static Result<std::unique_ptr<Endpoint>> Create(EndpointConfig config,
                                                  std::shared_ptr<Transport> transport,
                                                  BlockSource* source, BlockSink* sink,
                                                  EndpointCallbacks callbacks = {});
  // Says goodbye to every peer, fails what is in progress (kCancelled), releases every lease
  // (BlockSource::Release with kCancelled), joins all threads.
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const EndpointConfig& config() const;
  const TransportCaps& transport_caps() const;

  // Starts accepting peers on `address`; returns the bound address. Accepted peers are
  // announced by on_peer_connected and by Accept() (which keeps the last kAcceptBacklog ids).
  // One listener per Endpoint.
  Result<std::string> Listen(std::string_view address);
  // The next peer accepted by the listener. kDeadlineExceeded when none came in time.
  Result<PeerId> Accept(Deadline deadline);
  // Connects and runs the handshake. kFailedPrecondition (incompatible), kPermissionDenied
  // (token), kUnavailable (unreachable, retry), kDeadlineExceeded.
  Result<PeerId> Connect(std::string_view address, Deadline deadline);
  // Says goodbye and closes the connection; its transfers end kCancelled. Unknown peer: no-op.
  void Disconnect(PeerId peer);
  // Whether `peer` is connected.
  bool IsConnected(PeerId peer) const;
  // What the link to `peer` carries, in payload+header bytes per second, measured from the
  // frames this side sent while more data waited behind them (link_estimator.h) - no more than
  // the engine's own shaping rate when it shapes the link, and no more than the transport's
  // delivery rate (tcp: the kernel's, from ACKs) when it has one; 0 until enough was sent
  // that way (or for an unknown peer).
  double LinkBytesPerSecond(PeerId peer) const;

  // Posts a batch of block ranges. kInvalidArgument (empty, or out of the geometry),
  // kNotFound / kUnavailable (no such peer / peer down), kFailedPrecondition (no source for a
  // push or no sink for a pull; pushing a request whose lease was released).
  Result<TransferHandle> Post(PeerId peer, const TransferRequest& request);
  // A snapshot. kNotFound for an unknown (or released) handle.
  Result<TransferProgress> Poll(TransferHandle handle) const;
  // Waits until the transfer is terminal: OK when kDone, its status when it failed or was
  // cancelled, kDeadlineExceeded when `deadline` passed first (the transfer keeps going).
  Status Wait(TransferHandle handle, Deadline deadline);
  // Cancels a transfer (the peer stops sending/serving it). OK if already terminal.
  Status Cancel(TransferHandle handle);
  // Forgets a terminal transfer's record now (else it is kept for `retention`).
  void Release(TransferHandle handle);

  // Cancels everything about `request_id` on every peer: transfers end kCancelled, the peer is
  // told, blocks still in flight are dropped as stale on arrival, the lease is released.
  void CancelRequest(std::uint64_t request_id);
  // Tells `peer` (the sending side) that this side has all it wants of `request_id`: its
  // remaining transfers of the request are cancelled and its lease is released (completed).
  Status FinishRequest(PeerId peer, std::uint64_t request_id);

  // Sending side: holds (or renews) a lease on request_id for `ttl` (0: lease_ttl). Pushes
  // take or renew a lease by themselves; pulls of an unleased request take one too.
  // kFailedPrecondition if the request's lease was already released.
  Status HoldLease(std::uint64_t request_id, core::Nanos ttl = 0);
  // Releases the lease now (completed); BlockSource::Release follows once no read is in flight.
  void ReleaseLease(std::uint64_t request_id);

  // The BlockSource has new blocks: retry sends parked on kUnavailable now.
  void NotifySourceReady();

  // Sends an opaque control message to the peer (delivered to its on_control in order with
  // other control messages). `bytes` is copied. kUnavailable when the peer is down.
  Status SendControl(PeerId peer, std::uint32_t type, ConstBytes bytes);

  Metrics GetMetrics() const;

  class Core;  // the implementation (endpoint_core.h)

 private:
  explicit Endpoint(std::unique_ptr<Core> core);
  std::unique_ptr<Core> core_;
};

}  // namespace smartgen::transfer
