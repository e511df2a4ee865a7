// Link: one simulated network link (a NIC uplink or a point-to-point path) with a rate, a
// one-way latency and the transfer engine's priority classes (DESIGN.md section 6):
// on-demand > proactive (and bulk full/layerwise pushes) > speculative, FIFO within a class,
// preemptive at frame boundaries: a transfer posted while a lower class is on the wire waits
// for the end of the frame being sent, at most frame_bytes, as the engine's sender thread does.
//
// Every frame carries the protocol's 64-byte header (transfer/frame.h), which the wire and the
// engine's rate limiter count: a transfer's payload leaves at rate * frame / (frame + header).
//
// A transfer's callback runs when its last byte has arrived: end of serialisation + latency.
// Several prefill/decode pairs may share one Link (a shared uplink); bytes and busy time are
// counted per path. Bytes are doubles: the simulator moves expected (fractional) block counts.
//
// Thread-safety: none (one simulation thread). The EventQueue must outlive the Link.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "sim/event_queue.h"

namespace smartgen::sim {

// What a transfer carries; each path has one priority class.
enum class Path : int {
  kControl = 0,   // requests for blocks, PrefillDone: tiny, highest class
  kOnDemand,      // decode-step fetches
  kFirstStep,     // SmartGen: the prefill node's first-step blocks, at on-demand priority
  kSummary,       // SmartGen block summaries (control messages, like the node's)
  kProactive,     // SmartGen proactive blocks
  kFull,          // full mode: whole KV after prefill
  kLayerwise,     // layerwise mode: each layer when computed
  kSpeculative,   // SmartGen background stream
  kCount
};
std::string_view PathName(Path p);
// 0 = most urgent. Control, summaries, on-demand and first step 0, proactive/full/layerwise 1,
// speculative 2.
int PriorityOf(Path p);

// The transfer protocol's frame header (transfer/frame.h kFrameHeaderBytes; sim does not link
// the transfer engine).
inline constexpr double kEngineFrameHeaderBytes = 64;

struct LinkConfig {
  double gbps = 25;           // line rate, 1e9 bit/s
  Seconds latency_s = 0;      // one way
  double frame_bytes = 0;     // preemption granularity; 0 = the engine's rule (EngineFrameBytes)
  // A token bucket's burst: bytes an idle link sends at once before the rate applies (the
  // engine's shaping starts full and refills at the rate while idle, transfer/rate_limiter.h).
  // 0 = none (a physical link at line rate); < 0 = the engine's rule (EngineBucketBytes).
  double burst_bytes = 0;
  // Bytes each frame adds on the wire (the engine's header); 0 = none.
  double header_bytes = kEngineFrameHeaderBytes;
};

// The engine's token bucket: max(64 KiB, 5 ms at the rate).
double EngineBucketBytes(double gbps);

// The engine's frame payload cap: a quarter of the rate limiter's bucket (max(64 KiB, 5 ms at
// the rate)) less the header, at most max_frame_bytes (1 MiB) (transfer/rate_limiter.h,
// transfer/endpoint_lifecycle.cc).
double EngineFrameBytes(double gbps);

// The engine's frame of adjacent blocks: as many whole blocks of `block_bytes` as the cap
// holds, at least one.
double EngineFrameBytes(double gbps, double block_bytes);

class Link {
 public:
  using Callback = std::function<void()>;

  Link(EventQueue* queue, const LinkConfig& config, std::string name = "link");

  // Queues `bytes` (>= 0) on `path`; `on_arrive` runs when the last byte has arrived.
  // Returns an id for Cancel. A zero-byte transfer still pays the latency. `frame_bytes` > 0
  // sets this transfer's frames (a frame is a run of adjacent blocks: a ranked, scattered
  // set of blocks travels in frames of about one block); 0 = the link's frame.
  std::uint64_t Send(Path path, double bytes, Callback on_arrive, double frame_bytes = 0);
  // Drops the unsent part of a transfer (queued or on the wire; the frame on the wire is cut
  // short: the simulator does not model the bytes already in a socket buffer). Its callback
  // never runs. Returns the bytes that were never sent (0 for an unknown or finished id).
  double Cancel(std::uint64_t id);

  const std::string& name() const { return name_; }
  const LinkConfig& config() const { return config_; }
  double bytes_per_second() const { return bytes_per_s_; }
  double frame_bytes() const { return frame_bytes_; }
  // Payload bytes serialised so far on `path` (up to now()); headers are not counted.
  double bytes_sent(Path p);
  double total_bytes_sent();
  // Seconds the link has been sending so far.
  Seconds busy_seconds();
  // Bytes queued or on the wire of priority class <= prio (0 = on-demand only).
  double backlog_bytes(int prio) const;
  bool idle() const { return !current_.has_value(); }

 private:
  struct Transfer {
    std::uint64_t id;
    Path path;
    double size;
    double remaining;
    double frame;
    double wire_per_byte;  // (frame + header) / frame: wire bytes per payload byte
    Callback on_arrive;
  };
  void Advance();
  void StartNext();
  void ScheduleWake(Seconds t);
  void Wake(std::uint64_t generation);

  EventQueue* queue_;
  LinkConfig config_;
  std::string name_;
  double bytes_per_s_;
  double frame_bytes_;
  std::array<std::deque<Transfer>, 3> queues_;
  std::optional<Transfer> current_;
  Seconds run_start_ = 0;
  std::uint64_t wake_generation_ = 0;
  std::uint64_t next_id_ = 1;
  std::array<double, static_cast<int>(Path::kCount)> bytes_{};
  Seconds busy_ = 0;
  double bucket_ = 0, credit_ = 0;  // burst size; tokens left when the link last went idle
  Seconds idle_since_ = 0;
  bool busy_run_ = false;           // sending (or between transfers of one busy period)
};

}  // namespace smartgen::sim
