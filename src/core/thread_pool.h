// ThreadPool: a fixed set of threads for data-parallel kernels (GEMM, attention, prefill).
//
// Work is a list of chunks claimed one at a time from a shared counter. The calling thread
// takes part (ThreadPool(2) starts one worker) and claims chunks like any worker, so a worker
// that is not scheduled (a shared or oversubscribed machine) costs nothing: the caller does
// every chunk nobody has claimed, and waits only for chunks a running worker has already
// claimed. A late worker that wakes after the last claim finds nothing to do. Workers spin
// for a bounded time (kSpinMicros) after their last chunk, then sleep on a futex
// (std::atomic::wait), so an idle pool costs no CPU.
//
// A pass may come with an IdlePrefetch plan (idle_prefetch.h): a thread that finds no chunk left
// to claim prefetches its lane's ranges, a KiB at a time, until the pass is done. The caller runs
// lane 0, worker i lane i (CurrentLane()).
//
// Placement (optional, Create with a CPU list; cpu_placement.h): lane i runs on cpus[i] only.
// Workers are pinned when the pool is made; the thread that runs lane 0 is whichever calls, so
// it is pinned to cpus[0] when it first takes the pool (a call that runs inline pins nothing).
//
// Thread-safety: every entry point may be called from any thread. A call made while another
// thread holds the pool, or from inside a chunk (nested parallelism), runs its chunks inline
// on the calling thread (Run then calls fn(0, 1)), so no caller ever blocks on the pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/idle_prefetch.h"
#include "core/result.h"

namespace smartgen::core {

class ThreadPool {
 public:
  // n_threads >= 1 threads in all, the caller included.
  explicit ThreadPool(int n_threads);
  // n_threads lanes placed on `cpus` (see above; empty: not placed). kInvalidArgument if the list
  // has fewer CPUs than n_threads, kUnavailable if the kernel refuses a pin.
  static Result<std::unique_ptr<ThreadPool>> Create(int n_threads, std::vector<int> cpus);
  // A command's compute pool from its --threads and --cpus: `cpu_list` "" leaves everything
  // unplaced; otherwise the process is confined to the listed CPUs (PlaceProcessOn) and the
  // lanes pinned to the first n_threads of them, in the order given. Errors as Create's, and
  // ParseCpuList's for the list.
  static Result<std::unique_ptr<ThreadPool>> CreateOn(int n_threads, std::string_view cpu_list);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // The CPU of each lane (empty: not placed).
  const std::vector<int>& cpus() const { return cpus_; }

  // Calls fn(chunk) exactly once for each chunk in [0, n_chunks), in any order and on any
  // threads (several chunks may run on one thread, the caller's included); returns when all
  // have returned. Chunks are claimed in increasing order, so put the longest first.
  // `idle` (optional, copied): what each lane prefetches once it has no chunk left.
  template <typename Fn>
  void ForEachChunk(std::int64_t n_chunks, Fn&& fn, const IdlePrefetch* idle = nullptr) {
    using F = std::remove_reference_t<Fn>;
    RunChunks([](void* ctx, std::int64_t c) { (*static_cast<F*>(ctx))(c); },
              const_cast<void*>(static_cast<const void*>(&fn)), n_chunks, idle);
  }

  // The calling thread's lane in the pass it is running chunks of: 0 for the caller, i for
  // worker i; -1 on a thread that is not running a pass of a pool with several threads (a pass
  // run inline included).
  static int CurrentLane();

  // Calls fn(share, n_shares) exactly once for each share in [0, size()), shares claimed like
  // ForEachChunk's chunks (a share is not tied to a thread: the caller may run several);
  // returns when all have returned. A nested call or a one-thread pool runs fn(0, 1) only.
  template <typename Fn>
  void Run(Fn&& fn) {
    if (InlineOnly()) {
      fn(0, 1);
      return;
    }
    const int nt = n_threads_;
    ForEachChunk(nt, [&](std::int64_t t) { fn(static_cast<int>(t), nt); });
  }

  // Splits [0, n) into contiguous ranges of at least `grain` items (about kChunksPerThread per
  // thread, for balance when threads run at different speeds) and calls fn(begin, end) once
  // for each, like ForEachChunk. A range too small to split runs inline, with no pool round trip.
  template <typename Fn>
  void ParallelFor(std::int64_t n, Fn&& fn, std::int64_t grain = 1) {
    if (n <= 0) return;
    const std::int64_t chunks = ChunkCount(n, grain);
    if (chunks == 1) {
      fn(std::int64_t{0}, n);
      return;
    }
    ForEachChunk(chunks, [&](std::int64_t c) {
      const auto [begin, end] = SplitRange(n, static_cast<int>(c), static_cast<int>(chunks));
      fn(begin, end);
    });
  }

  // Ranges per thread that ParallelFor aims at.
  static constexpr int kChunksPerThread = 4;
  // How many ranges ParallelFor cuts [0, n) into: 1 .. size() * kChunksPerThread, each of at
  // least `grain` items (1 when the pool has one thread or the call would run inline).
  std::int64_t ChunkCount(std::int64_t n, std::int64_t grain) const;

  // The chunk [begin, end) of [0, n) that part t of nt takes (the first parts take the
  // remainder): contiguous, in order, sizes differing by at most one.
  static std::pair<std::int64_t, std::int64_t> SplitRange(std::int64_t n, int t, int nt) {
    const std::int64_t base = n / nt, extra = n % nt;
    const std::int64_t begin = t * base + (t < extra ? t : extra);
    return {begin, begin + base + (t < extra ? 1 : 0)};
  }

  // How long a thread spins for new work (workers) or for claimed chunks to finish (the
  // caller) before it sleeps: long enough to bridge back-to-back kernels of a forward pass,
  // short enough not to keep a shared core from another process.
  static constexpr int kSpinMicros = 100;

 private:
  using ChunkFn = void (*)(void* ctx, std::int64_t chunk);
  // Whether a call from this thread now would run inline (nested call or one-thread pool).
  bool InlineOnly() const;
  void RunChunks(ChunkFn fn, void* ctx, std::int64_t n_chunks, const IdlePrefetch* idle);
  // One job of at most kMaxJobChunks chunks; returns false if the pool was busy (nothing run).
  bool TryRunJob(ChunkFn fn, void* ctx, std::int64_t first, std::uint32_t n,
                 const IdlePrefetch* idle);
  // Prefetches `lane`'s planned ranges while job `gen` of n chunks is unfinished.
  void PrefetchWhileWaiting(int lane, std::uint32_t gen, std::uint32_t n);
  // Claims the next chunk of job `gen`: its index and the job's chunk count, or false.
  bool Claim(std::uint32_t gen, std::uint32_t* chunk, std::uint32_t* n);
  void WorkerLoop(int lane);
  // Pins the calling thread to cpus_[0] unless it was pinned for this pool already.
  void PlaceCaller();

  // The job state word: generation (32 bits) | chunk count (16) | next unclaimed chunk (16).
  static constexpr std::uint32_t kMaxJobChunks = 0xffff;

  const int n_threads_;
  std::vector<int> cpus_;    // set by Create before the first pass
  std::uint64_t id_ = 0;     // unique per pool: which pool placed a calling thread
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // held by the caller whose job the pool runs

  // The current job: fn/ctx/first are written under run_mutex_ before state_ publishes the
  // job; a thread that claims a chunk of it may read them until it counts that chunk in done_.
  ChunkFn job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
  std::int64_t job_first_ = 0;  // chunk index offset of this job within the caller's range
  std::uint32_t generation_ = 0;              // under run_mutex_
  std::atomic<std::uint64_t> state_{0};       // packed job state (see above)
  std::atomic<std::uint32_t> done_{0};        // chunks of the current job finished
  std::atomic<std::uint32_t> wake_{0};        // futex word: the latest generation
  std::atomic<bool> stop_{false};

  // The current job's IdlePrefetch, per lane: written by the caller under run_mutex_ before
  // state_ publishes the job. Atomics, because a worker still waiting on the previous job may
  // read them while they change: it then prefetches a wrong range, which costs a little
  // bandwidth and nothing else (a prefetch never faults).
  struct IdleRange {
    std::atomic<const std::byte*> p{nullptr};
    std::atomic<std::size_t> bytes{0};
  };
  IdleRange idle_[IdlePrefetch::kMaxLanes][IdlePrefetch::kMaxRanges];
  std::atomic<int> idle_ranges_[IdlePrefetch::kMaxLanes] = {};
};

}  // namespace smartgen::core
