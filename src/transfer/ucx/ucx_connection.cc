#include "transfer/ucx/ucx_connection.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "core/log.h"

namespace smartgen::transfer {
namespace {

constexpr ucp_tag_t kFrameTag = 0x53474B46;  // one peer per worker: a single tag suffices
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};
constexpr std::uint32_t kBootstrapMagic = 0x58554753;  // "SGUX"
constexpr std::uint32_t kMaxAddressBytes = 1 << 20;
// After the peer's bootstrap socket closes, messages it sent may still be in flight in UCX.
constexpr core::Nanos kPeerGoneGrace = core::Millis(100);
// Longest teardown wait for UCX to finish cancelled requests.
constexpr core::Nanos kTeardownLimit = core::Seconds(5);

void OnEpError(void* arg, ucp_ep_h, ucs_status_t status) {
  *static_cast<Status*>(arg) = UcxStatus(status, "UCX endpoint failed");
}

}  // namespace

struct UcxConnection::Op {
  bool send = false;
  bool async = false;                    // posted by a pipelined Send (owned by async_)
  EncodedHeader header_copy{};           // a pipelined send's header
  std::shared_ptr<const void> keepalive; // keeps a pipelined send's payload alive
  std::vector<ucp_dt_iov_t> iov;
  std::size_t total = 0;
  void* request = nullptr;
  // Set by the UCX callback on the progress thread.
  bool completed = false;
  ucs_status_t ucx_status = UCS_OK;
  std::size_t received = 0;
  // Guarded by UcxConnection::mu_.
  bool done = false;
  Status status;
};

namespace {

void OnSend(void*, ucs_status_t status, void* user_data) {
  auto* op = static_cast<UcxConnection::Op*>(user_data);
  op->completed = true;
  op->ucx_status = status;
}

void OnRecv(void*, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) {
  auto* op = static_cast<UcxConnection::Op*>(user_data);
  op->completed = true;
  op->ucx_status = status;
  if (info) op->received = info->length;
}

Status ExchangeAddresses(int fd, const std::string& mine, std::string* theirs, Deadline deadline) {
  const std::uint32_t header[2] = {kBootstrapMagic, static_cast<std::uint32_t>(mine.size())};
  SG_RETURN_IF_ERROR(WriteAll(fd, header, sizeof(header), -1, deadline));
  SG_RETURN_IF_ERROR(WriteAll(fd, mine.data(), mine.size(), -1, deadline));
  std::uint32_t peer[2] = {0, 0};
  SG_RETURN_IF_ERROR(ReadAll(fd, peer, sizeof(peer), -1, deadline));
  if (peer[0] != kBootstrapMagic) {
    return FailedPrecondition("ucx bootstrap: peer is not a smartgen ucx endpoint");
  }
  if (peer[1] == 0 || peer[1] > kMaxAddressBytes) {
    return DataLoss("ucx bootstrap: bad worker address length {}", peer[1]);
  }
  theirs->resize(peer[1]);
  return ReadAll(fd, theirs->data(), theirs->size(), -1, deadline);
}

}  // namespace

Result<std::unique_ptr<UcxConnection>> UcxConnection::Create(std::shared_ptr<UcxContext> context,
                                                             UniqueFd bootstrap,
                                                             Deadline deadline,
                                                             bool peer_error_handling) {
  std::unique_ptr<UcxConnection> c(new UcxConnection());
  c->context_ = std::move(context);
  c->bootstrap_ = std::move(bootstrap);
  c->description_ = fmt::format("ucx {}->{}", LocalAddress(c->bootstrap_.get()),
                                PeerAddress(c->bootstrap_.get()));
  SG_ASSIGN_OR_RETURN(c->worker_, UcxWorker::Create(c->context_));
  SG_ASSIGN_OR_RETURN(std::string mine, c->worker_.Address());
  std::string theirs;
  SG_RETURN_IF_ERROR(ExchangeAddresses(c->bootstrap_.get(), mine, &theirs, deadline)
                         .WithContext(c->description_));

  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(theirs.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = OnEpError;
  params.err_handler.arg = &c->ep_error_;
  ucs_status_t st = UCS_ERR_UNSUPPORTED;
  if (peer_error_handling) st = ucp_ep_create(c->worker_.get(), &params, &c->ep_);
  if (st != UCS_OK) {
    // Shared memory cannot report a peer's failure (UCX then calls the peer unreachable);
    // the bootstrap socket still does.
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    st = ucp_ep_create(c->worker_.get(), &params, &c->ep_);
  }
  if (st != UCS_OK) return UcxStatus(st, "ucp_ep_create " + c->description_);

  c->wake_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  c->epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (!c->wake_.valid() || !c->epoll_.valid()) return ErrnoStatus(errno, "eventfd/epoll");
  SG_ASSIGN_OR_RETURN(int efd, c->worker_.EventFd());
  for (int fd : {efd, c->wake_.get(), c->bootstrap_.get()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(c->epoll_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) {
      return ErrnoStatus(errno, "epoll_ctl");
    }
  }
  c->progress_ = std::thread([raw = c.get()] { raw->ProgressLoop(); });
  return c;
}

UcxConnection::~UcxConnection() {
  Shutdown();
  if (progress_.joinable()) progress_.join();
}

void UcxConnection::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  if (wake_.valid()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof(one));
  }
}

Status UcxConnection::Submit(std::span<Op*> ops) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return Cancelled("connection shut down");
    if (!failure_.ok()) return failure_;
    for (Op* op : ops) submitted_.push_back(op);
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof(one));
  return Status::Ok();
}

Status UcxConnection::WaitDone(std::span<Op*> ops, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  auto all_done = [&] {
    return std::all_of(ops.begin(), ops.end(), [](Op* op) { return op->done; });
  };
  bool timed_out = false;
  while (!all_done()) {
    const core::Nanos left = deadline.Remaining();
    if (left <= 0 && !timed_out) {
      // UCX still owns the buffers: fail the link and wait for the progress thread to return
      // them (it completes every request while tearing down).
      timed_out = true;
      if (failure_.ok()) failure_ = DeadlineExceeded("{}: UCX request timed out", description_);
      lock.unlock();
      const std::uint64_t wake = 1;
      [[maybe_unused]] const ssize_t w = ::write(wake_.get(), &wake, sizeof(wake));
      lock.lock();
      continue;
    }
    cv_.wait_for(lock, std::chrono::nanoseconds(timed_out ? core::Millis(100)
                                                          : std::min(left, core::Seconds(1))));
  }
  for (Op* op : ops) {
    if (!op->status.ok()) return op->status;
  }
  return Status::Ok();
}

Status UcxConnection::Run(std::span<Op*> ops, Deadline deadline) {
  SG_RETURN_IF_ERROR(Submit(ops));
  return WaitDone(ops, deadline);
}

void UcxConnection::Post(Op* op) {
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
  param.datatype = ucp_dt_make_iov();
  param.user_data = op;
  ucs_status_ptr_t request;
  if (op->send) {
    param.cb.send = OnSend;
    request = ucp_tag_send_nbx(ep_, op->iov.data(), op->iov.size(), kFrameTag, &param);
  } else {
    param.cb.recv = OnRecv;
    param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;  // the length comes from the callback
    request = ucp_tag_recv_nbx(worker_.get(), op->iov.data(), op->iov.size(), kFrameTag,
                               kFullMask, &param);
  }
  if (request == nullptr) {  // completed in place
    Finish(op, Status::Ok());
    return;
  }
  if (UCS_PTR_IS_ERR(request)) {
    Finish(op, UcxStatus(UCS_PTR_STATUS(request), op->send ? "tag send" : "tag receive"));
    return;
  }
  op->request = request;
  in_flight_.push_back(op);
}

void UcxConnection::Finish(Op* op, Status status) {
  if (status.ok() && !op->send && op->received != 0 && op->received != op->total) {
    status = DataLoss("{}: received a {} byte message where {} were expected", description_,
                      op->received, op->total);
  }
  // Dropped after the lock: releasing a pipelined send's memory may run the owner's code.
  const std::shared_ptr<const void> keepalive = std::move(op->keepalive);
  std::lock_guard<std::mutex> lock(mu_);
  if (op->async && !status.ok() && status.code() != StatusCode::kCancelled && failure_.ok()) {
    failure_ = status;  // nobody waits for a pipelined send: the next call reports it
  }
  op->status = std::move(status);
  op->done = true;
  cv_.notify_all();
}

bool UcxConnection::BootstrapClosed() {
  char byte;
  const ssize_t n = ::recv(bootstrap_.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
  return false;
}

void UcxConnection::Teardown(const Status& why, bool orderly) {
  for (Op* op : in_flight_) {
    if (!op->send && !op->completed) ucp_request_cancel(worker_.get(), op->request);
  }
  // An orderly close flushes what was sent (the peer must still get our last frames, e.g. the
  // goodbye); a failed link is torn down at once.
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = orderly ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t close = ucp_ep_close_nbx(ep_, &param);
  ep_ = nullptr;
  const core::Nanos limit = core::NowNanos() + kTeardownLimit;
  auto pending = [&] {
    const bool closing = close != nullptr && !UCS_PTR_IS_ERR(close) &&
                         ucp_request_check_status(close) == UCS_INPROGRESS;
    const bool ops = std::any_of(in_flight_.begin(), in_flight_.end(),
                                 [](Op* op) { return !op->completed; });
    return closing || ops;
  };
  while (pending() && core::NowNanos() < limit) ucp_worker_progress(worker_.get());
  if (close != nullptr && !UCS_PTR_IS_ERR(close)) {
    if (ucp_request_check_status(close) == UCS_INPROGRESS) {
      SG_LOG_ERROR("ucx", "{}: endpoint close did not finish", description_);
    }
    ucp_request_free(close);
  }
  for (Op* op : in_flight_) {
    if (op->completed) {
      ucp_request_free(op->request);
    } else {
      SG_LOG_ERROR("ucx", "{}: a UCX request did not finish during teardown", description_);
    }
    Finish(op, why);
  }
  in_flight_.clear();
  ::shutdown(bootstrap_.get(), SHUT_RDWR);
}

void UcxConnection::ProgressLoop() {
  std::vector<Op*> batch;
  core::Nanos peer_gone_since = 0;
  bool orderly = false;
  for (;;) {
    Status failure;
    {
      std::lock_guard<std::mutex> lock(mu_);
      batch.assign(submitted_.begin(), submitted_.end());
      submitted_.clear();
      // A failed endpoint or a closed bootstrap socket: frames the peer sent before it went
      // may still be arriving, so the link is declared down only after a grace period.
      if (!ep_error_.ok() && peer_gone_since == 0) peer_gone_since = core::NowNanos();
      if (peer_gone_since != 0 && core::NowNanos() - peer_gone_since > kPeerGoneGrace &&
          failure_.ok()) {
        failure_ = ep_error_.ok() ? Unavailable("{}: peer closed the connection", description_)
                                  : ep_error_.WithContext(description_);
      }
      orderly = stop_ && failure_.ok() && peer_gone_since == 0;
      failure = stop_ ? Cancelled("connection shut down") : failure_;
    }
    if (!failure.ok()) {
      for (Op* op : batch) Finish(op, failure);
      Teardown(failure, orderly);
      std::vector<std::shared_ptr<const void>> released;
      {
        std::lock_guard<std::mutex> lock(mu_);
        // Requests that raced with the teardown.
        for (Op* op : submitted_) {
          released.push_back(std::move(op->keepalive));
          op->status = failure;
          op->done = true;
        }
        submitted_.clear();
        exited_ = true;
        cv_.notify_all();
      }
      return;  // `released` is dropped here, outside the lock
    }
    for (Op* op : batch) Post(op);

    int progressed = 0;
    while (ucp_worker_progress(worker_.get()) != 0 && progressed < 1024) ++progressed;
    bool finished_any = false;
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      Op* op = *it;
      if (!op->completed) {
        ++it;
        continue;
      }
      ucp_request_free(op->request);
      op->request = nullptr;
      Finish(op, op->ucx_status == UCS_OK
                     ? Status::Ok()
                     : UcxStatus(op->ucx_status, op->send ? "tag send" : "tag receive"));
      it = in_flight_.erase(it);
      finished_any = true;
    }
    if (progressed > 0 || finished_any || !batch.empty()) continue;

    // Idle: sleep until UCX, a new request, or the bootstrap socket has something.
    if (ucp_worker_arm(worker_.get()) == UCS_ERR_BUSY) continue;
    epoll_event events[3];
    const int n = epoll_wait(epoll_.get(), events, 3, peer_gone_since || !ep_error_.ok() ? 10 : 100);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_.get()) {
        std::uint64_t v;
        [[maybe_unused]] const ssize_t r = ::read(wake_.get(), &v, sizeof(v));
      } else if (events[i].data.fd == bootstrap_.get() && peer_gone_since == 0 &&
                 BootstrapClosed()) {
        peer_gone_since = core::NowNanos();
        epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, bootstrap_.get(), nullptr);
      }
    }
  }
}

Status UcxConnection::Send(std::span<const std::byte, kFrameHeaderBytes> header,
                           std::span<const ConstBytes> payload, Deadline deadline,
                           std::shared_ptr<const void> keepalive) {
  auto head = std::make_unique<Op>();
  head->send = true;
  std::memcpy(head->header_copy.data(), header.data(), kFrameHeaderBytes);
  head->iov.push_back({head->header_copy.data(), kFrameHeaderBytes});
  head->total = kFrameHeaderBytes;
  auto body = std::make_unique<Op>();
  body->send = true;
  for (ConstBytes part : payload) {
    if (part.empty()) continue;
    body->iov.push_back({const_cast<std::byte*>(part.data()), part.size()});
    body->total += part.size();
  }
  const bool has_body = body->total > 0;
  if (!keepalive) {
    Op* ops[2] = {head.get(), body.get()};
    return Run(std::span<Op*>(ops, has_body ? 2 : 1), deadline);
  }
  // Pipelined: up to kMaxAsyncFrames frames in flight, so a rendezvous round trip does not
  // stall the link. Make room first (finished frames are freed; a failure is reported).
  while (!async_.empty()) {
    AsyncFrame& oldest = async_.front();
    Op* ops[2] = {oldest.head.get(), oldest.body.get()};
    const std::span<Op*> frame(ops, oldest.body ? 2 : 1);
    bool done = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done = std::all_of(frame.begin(), frame.end(), [](Op* op) { return op->done; });
    }
    if (!done && async_.size() < kMaxAsyncFrames) break;
    SG_RETURN_IF_ERROR(WaitDone(frame, deadline));
    async_.pop_front();
  }
  head->async = body->async = true;
  (has_body ? body : head)->keepalive = std::move(keepalive);
  Op* ops[2] = {head.get(), body.get()};
  SG_RETURN_IF_ERROR(Submit(std::span<Op*>(ops, has_body ? 2 : 1)));
  async_.push_back({std::move(head), has_body ? std::move(body) : nullptr});
  return Status::Ok();
}

Status UcxConnection::ReceiveHeader(std::span<std::byte, kFrameHeaderBytes> header,
                                    Deadline deadline) {
  Op op;
  op.iov.push_back({header.data(), header.size()});
  op.total = header.size();
  Op* ops[1] = {&op};
  return Run(ops, deadline);
}

Status UcxConnection::ReceivePayload(std::span<const MutableBytes> parts, Deadline deadline) {
  Op op;
  for (MutableBytes part : parts) {
    if (part.empty()) continue;
    op.iov.push_back({part.data(), part.size()});
    op.total += part.size();
  }
  if (op.total == 0) return Status::Ok();
  Op* ops[1] = {&op};
  return Run(ops, deadline);
}

}  // namespace smartgen::transfer
