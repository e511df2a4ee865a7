// The implementation behind Endpoint (internal). One mutex, mu_, guards all engine state:
// sessions, transfers, leases, generations, send queues, counters. No BlockSource/BlockSink
// call, transport I/O or user callback ever happens under it.
//
// Files: endpoint.cc (the API), endpoint_sender.cc (per-peer sender thread),
// endpoint_receiver.cc (per-peer receiver thread, frame handling), endpoint_lifecycle.cc
// (sessions, housekeeping: deadlines, retransmission, leases, shutdown).
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "transfer/endpoint.h"
#include "transfer/frame.h"
#include "transfer/int8_wire.h"
#include "transfer/lease_table.h"
#include "transfer/link_estimator.h"
#include "transfer/rate_limiter.h"
#include "transfer/send_queue.h"
#include "transfer/serial_executor.h"
#include "transfer/transfer_op.h"

namespace smartgen::transfer {

// One connected peer.
struct Session {
  Session(PeerId id, std::unique_ptr<Connection> connection, const LinkConfig& link);

  const PeerId id;
  const std::unique_ptr<Connection> connection;
  const std::string description;
  RateLimiter limiter;
  std::unique_ptr<SerialExecutor> delay_line;  // when the link has latency
  std::thread sender;
  std::thread receiver;
  std::condition_variable send_cv;  // with Core::mu_: work for the sender

  // Guarded by Core::mu_.
  bool down = false;
  Status down_reason;
  int threads_running = 0;
  bool closing = false;       // we said goodbye: what follows is an orderly close
  bool goodbye_sent = false;
  std::deque<OwnedFrame> control;  // sent before any data frame
  std::vector<AckEntry> acks;      // coalesced into one ACK frame
  SendQueue data;
  core::Nanos last_send = 0;
  LinkEstimator link;  // the link's rate, from frames sent while more data waited
  mutable double delivery_bytes_per_second = 0;  // the transport's last delivery-rate sample (under mu_)
  core::Nanos last_ack = 0;  // the peer last acknowledged one of our pushed ranges

  // Owned by the receiver thread.
  std::vector<std::byte> scratch;  // where discarded blocks are read into
};

class Endpoint::Core {
 public:
  Core(EndpointConfig config, std::shared_ptr<Transport> transport, BlockSource* source,
       BlockSink* sink, EndpointCallbacks callbacks);
  ~Core();

  void Start();
  void Shutdown();

  // --- API (endpoint.cc) ---
  const EndpointConfig& config() const { return config_; }
  const TransportCaps& caps() const { return transport_->caps(); }
  Result<std::string> Listen(std::string_view address);
  Result<PeerId> Accept(Deadline deadline);
  Result<PeerId> Connect(std::string_view address, Deadline deadline);
  void Disconnect(PeerId peer);
  bool IsConnected(PeerId peer) const;
  double LinkBytesPerSecond(PeerId peer) const;
  Result<TransferHandle> Post(PeerId peer, const TransferRequest& request);
  Result<TransferProgress> Poll(TransferHandle handle) const;
  Status Wait(TransferHandle handle, Deadline deadline);
  Status Cancel(TransferHandle handle);
  void Release(TransferHandle handle);
  void CancelRequest(std::uint64_t request_id);
  Status FinishRequest(PeerId peer, std::uint64_t request_id);
  Status HoldLease(std::uint64_t request_id, core::Nanos ttl);
  void ReleaseLease(std::uint64_t request_id);
  void NotifySourceReady();
  Status SendControl(PeerId peer, std::uint32_t type, ConstBytes bytes);
  Metrics GetMetrics() const;

 private:
  using Lock = std::unique_lock<std::mutex>;

  // --- sender (endpoint_sender.cc) ---
  void SenderLoop(std::shared_ptr<Session> s);
  // Sends one chunk of data; `lock` is held on entry and exit, released around I/O.
  void SendChunk(Session& s, const Chunk& chunk, Lock& lock);
  // Waits for the rate limiter, then sends; `keepalive` keeps the payload memory alive for a
  // pipelining transport. `lock` is held on entry and exit. The caller drops its keepalive
  // reference without the lock.
  Status SendFrame(Session& s, const EncodedHeader& header, std::span<const ConstBytes> payload,
                   std::size_t bytes, std::shared_ptr<const void> keepalive, Lock& lock);

  // --- receiver (endpoint_receiver.cc) ---
  void ReceiverLoop(std::shared_ptr<Session> s);
  Status ReceiveData(const std::shared_ptr<Session>& s, const FrameHeader& header);
  Status ReceiveControl(const std::shared_ptr<Session>& s, const FrameHeader& header);
  // Runs `task` now, or after the link latency on the session's delay line.
  void Deliver(Session& s, std::function<void()> task);
  void HandleControl(const std::shared_ptr<Session>& s, const OwnedFrame& frame);
  void HandleAckLocked(Session& s, const AckEntry& ack, core::Nanos now);
  void HandlePullLocked(Session& s, const FrameHeader& header, std::vector<PullEntry> entries,
                        core::Nanos now);
  Status ValidateRange(const BlockRange& range) const;

  // --- lifecycle (endpoint_lifecycle.cc) ---
  Result<PeerId> AddSession(std::unique_ptr<Connection> connection);
  void AcceptLoop();
  void HousekeepingLoop();
  void CheckTransfersLocked(core::Nanos now);
  // A pushed range unacknowledged for this many retransmit timeouts is sent again even while
  // the peer acknowledges others (it was lost, not queued).
  static constexpr int kLostAfterTimeouts = 8;
  void ExpireLeasesLocked(core::Nanos now);
  // Ends a session: closes the connection, fails or cancels its transfers, tells callbacks.
  // `peer_goodbye`: the peer closed in order (logged quietly, not counted as lost).
  void MarkDownLocked(Session& s, const Status& why, bool peer_goodbye = false);
  // Queues a GOODBYE; the session is closing from then on.
  void SayGoodbyeLocked(Session& s);
  void FinishOpLocked(TransferOp& op, TransferState state, Status status);
  // Cancels everything about a request; `generation` 0 means bump the local one and tell peers.
  void EndRequestLocked(std::uint64_t request_id, std::uint32_t generation, ReleaseReason reason,
                        bool tell_peers);
  void ApplyReleaseLocked(const std::optional<LeaseRelease>& release);
  void QueueControlLocked(Session& s, OwnedFrame frame);
  // A PULL for `entries` of `op`; `replace`: they are all that is missing (else: add them).
  void QueuePullLocked(Session& s, const TransferOp& op, std::vector<PullEntry> entries,
                       bool replace);
  std::uint32_t GenerationLocked(std::uint64_t request_id) const;
  Session* FindSessionLocked(PeerId peer) const;
  // OK when `s` (the session of `peer`, or null) can take work; else why not.
  Status CheckPeerLocked(PeerId peer, const Session* s) const;
  TransferOp* FindOpLocked(std::uint64_t id) const;
  void PostCallback(std::function<void()> fn);

  const EndpointConfig config_;
  const std::shared_ptr<Transport> transport_;
  BlockSource* const source_;
  BlockSink* const sink_;
  const EndpointCallbacks callbacks_;
  const std::size_t block_bytes_;
  std::uint32_t max_frame_blocks_ = 1;

  mutable std::mutex mu_;
  std::condition_variable ops_cv_;           // a transfer changed state / goodbye sent
  std::condition_variable accept_cv_;        // accepted_ grew
  std::condition_variable housekeeping_cv_;  // wake the housekeeper
  bool shutting_down_ = false;
  std::uint64_t next_peer_ = 1;
  std::uint64_t next_op_ = 1;
  std::map<std::uint64_t, std::shared_ptr<Session>> sessions_;
  std::deque<PeerId> accepted_;
  std::unordered_map<std::uint64_t, std::unique_ptr<TransferOp>> ops_;
  std::uint64_t ops_active_ = 0;
  LeaseTable leases_;
  struct Generation {
    std::uint32_t value = 0;
    core::Nanos at = 0;
  };
  std::unordered_map<std::uint64_t, Generation> generations_;
  Metrics counters_;  // the cumulative fields
  mutable RateMeter send_meter_;
  mutable RateMeter receive_meter_;
  Connection* handshaking_ = nullptr;  // the accepted connection in its handshake

  // What a read pin's deleter calls back into. A transport may hold a pin (the block memory of
  // a frame it still sends) past the endpoint's shutdown; the deleter then finds `core` null.
  struct PinOwner {
    std::mutex mu;
    Core* core = nullptr;  // guarded by mu; cleared at the end of Shutdown
  };
  const std::shared_ptr<PinOwner> pin_owner_ = std::make_shared<PinOwner>();
  // Drops one read pin of request_id (from a pin's deleter; takes mu_).
  void Unpin(std::uint64_t request_id);

  std::unique_ptr<Listener> listener_;
  std::thread accept_thread_;
  std::thread housekeeping_;
  SerialExecutor callbacks_thread_;
};

}  // namespace smartgen::transfer
