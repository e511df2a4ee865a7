// A Connection over UCX UCP tag messages. Each frame is two tagged messages on the endpoint,
// the 64-byte header and (when non-empty) the payload as an IOV datatype, so UCX gathers from
// block memory and scatters into sink memory (rendezvous, zero copy where the transport
// allows: shared memory via CMA, RDMA verbs).
//
// Threading: the connection owns its ucp_worker, driven by one progress thread
// (UCS_THREAD_MODE_SINGLE); Send/Receive hand requests to it and wait on a condition variable.
// A Send with a keepalive is pipelined: up to four frames in flight, so the rendezvous round
// trip of one frame overlaps the next.
// The progress thread sleeps on the worker's event fd (ucp_worker_arm), an eventfd for new
// requests, and the bootstrap TCP socket, whose closing tells that the peer is gone (UCX alone
// may notice a dead peer late or never, e.g. over shared memory).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transfer/socket.h"
#include "transfer/transport.h"
#include "transfer/ucx/ucx_context.h"

namespace smartgen::transfer {

class UcxConnection final : public Connection {
 public:
  // Exchanges worker addresses over `bootstrap` (a connected TCP socket, kept open as a liveness
  // signal), creates the UCP endpoint and starts the progress thread. `peer_error_handling`:
  // ask UCX to report peer failures (not available over shared memory).
  static Result<std::unique_ptr<UcxConnection>> Create(std::shared_ptr<UcxContext> context,
                                                       UniqueFd bootstrap, Deadline deadline,
                                                       bool peer_error_handling);
  ~UcxConnection() override;

  using Connection::Send;
  Status Send(std::span<const std::byte, kFrameHeaderBytes> header,
              std::span<const ConstBytes> payload, Deadline deadline,
              std::shared_ptr<const void> keepalive) override;
  Status ReceiveHeader(std::span<std::byte, kFrameHeaderBytes> header, Deadline deadline) override;
  Status ReceivePayload(std::span<const MutableBytes> parts, Deadline deadline) override;
  void Shutdown() override;
  std::string Describe() const override { return description_; }

  struct Op;  // one UCX request in flight (internal)

 private:
  UcxConnection() = default;
  // Queues ops for the progress thread (Submit), waits until they are done (WaitDone), both (Run).
  Status Submit(std::span<Op*> ops);
  Status WaitDone(std::span<Op*> ops, Deadline deadline);
  Status Run(std::span<Op*> ops, Deadline deadline);
  void ProgressLoop();
  void Post(Op* op);
  void Teardown(const Status& why, bool orderly);
  void Finish(Op* op, Status status);
  bool BootstrapClosed();

  std::shared_ptr<UcxContext> context_;
  UcxWorker worker_;
  ucp_ep_h ep_ = nullptr;
  UniqueFd bootstrap_;
  UniqueFd wake_;    // eventfd: new requests or shutdown
  UniqueFd epoll_;   // worker efd + wake_ + bootstrap_
  std::string description_;
  std::thread progress_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op*> submitted_;  // guarded by mu_
  bool stop_ = false;          // guarded by mu_: Shutdown() called
  Status failure_;             // guarded by mu_: why the link is down (OK while up)
  bool exited_ = false;        // guarded by mu_: the progress thread has finished

  // Pipelined sends still owned by UCX, oldest first. Used by the sending thread only.
  struct AsyncFrame {
    std::unique_ptr<Op> head;
    std::unique_ptr<Op> body;  // null when the frame had no payload
  };
  static constexpr std::size_t kMaxAsyncFrames = 4;
  std::deque<AsyncFrame> async_;

  // Owned by the progress thread.
  std::vector<Op*> in_flight_;
  Status ep_error_;
};

}  // namespace smartgen::transfer
