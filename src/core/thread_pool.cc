#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

#include "core/cpu_placement.h"
#include "core/log.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace smartgen::core {
namespace {

thread_local bool t_inside_job = false;
thread_local int t_lane = -1;  // ThreadPool::CurrentLane()
thread_local std::uint64_t t_placed_by = 0;  // the id of the pool that pinned this caller
std::atomic<std::uint64_t> g_next_pool_id{1};

// How much a waiting thread prefetches between two looks at whether its pass is done.
constexpr std::size_t kIdlePrefetchStep = 1024;

inline void CpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Spins until done() is true or kSpinMicros have passed; returns done().
template <typename Done>
bool SpinUntil(Done done) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicros);
  while (true) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      CpuRelax();
    }
    if (Clock::now() > deadline) return done();
  }
}

constexpr std::uint64_t Pack(std::uint32_t gen, std::uint32_t n, std::uint32_t next) {
  return (static_cast<std::uint64_t>(gen) << 32) | (static_cast<std::uint64_t>(n) << 16) | next;
}
constexpr std::uint32_t GenOf(std::uint64_t s) { return static_cast<std::uint32_t>(s >> 32); }
constexpr std::uint32_t CountOf(std::uint64_t s) { return static_cast<std::uint32_t>(s >> 16) & 0xffff; }
constexpr std::uint32_t NextOf(std::uint64_t s) { return static_cast<std::uint32_t>(s) & 0xffff; }

// A lane per CPU: a list shorter than the pool is refused (two lanes on one CPU would take turns).
Status CheckCpuCount(int n_threads, const std::vector<int>& cpus) {
  if (static_cast<int>(cpus.size()) >= std::max(n_threads, 1)) return Status::Ok();
  return InvalidArgument("{} compute threads need {} CPUs, the list {} has {} (pass --threads {} or list more)",
                         n_threads, n_threads, FormatCpuList(cpus), cpus.size(), cpus.size());
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

Result<std::unique_ptr<ThreadPool>> ThreadPool::Create(int n_threads, std::vector<int> cpus) {
  if (!cpus.empty()) SG_RETURN_IF_ERROR(CheckCpuCount(n_threads, cpus));
  auto pool = std::make_unique<ThreadPool>(n_threads);
  if (cpus.empty()) return pool;
  for (std::size_t i = 0; i < pool->workers_.size(); ++i) {
    SG_RETURN_IF_ERROR(PinThreadTo(pool->workers_[i], cpus[i + 1]).WithContext(fmt::format("pool lane {}", i + 1)));
  }
  pool->cpus_ = std::move(cpus);
  pool->cpus_.resize(static_cast<std::size_t>(pool->n_threads_));
  pool->id_ = g_next_pool_id.fetch_add(1, std::memory_order_relaxed);
  return pool;
}

Result<std::unique_ptr<ThreadPool>> ThreadPool::CreateOn(int n_threads, std::string_view cpu_list) {
  if (cpu_list.empty()) return Create(n_threads, {});
  SG_ASSIGN_OR_RETURN(std::vector<int> cpus, ParseCpuList(cpu_list));
  SG_RETURN_IF_ERROR(CheckCpuCount(n_threads, cpus));  // before the process is placed
  SG_RETURN_IF_ERROR(PlaceProcessOn(cpus));
  return Create(n_threads, std::move(cpus));
}

void ThreadPool::PlaceCaller() {
  if (t_placed_by == id_) return;
  t_placed_by = id_;
  if (const Status s = PinThisThreadTo(cpus_[0]); !s.ok()) {
    SG_LOG_WARN("pool", "the calling thread stays unpinned: {}", s.ToString());
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  wake_.fetch_add(1, std::memory_order_acq_rel);
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

bool ThreadPool::InlineOnly() const { return n_threads_ == 1 || t_inside_job; }

int ThreadPool::CurrentLane() { return t_lane; }

std::int64_t ThreadPool::ChunkCount(std::int64_t n, std::int64_t grain) const {
  if (InlineOnly() || n <= 0) return 1;
  const std::int64_t by_grain = n / std::max<std::int64_t>(grain, 1);
  return std::clamp<std::int64_t>(by_grain, 1, std::int64_t{n_threads_} * kChunksPerThread);
}

void ThreadPool::RunChunks(ChunkFn fn, void* ctx, std::int64_t n_chunks, const IdlePrefetch* idle) {
  if (n_chunks <= 0) return;
  if (n_chunks > 1 && !InlineOnly()) {
    for (std::int64_t first = 0; first < n_chunks; first += kMaxJobChunks) {
      const auto n = static_cast<std::uint32_t>(std::min<std::int64_t>(kMaxJobChunks, n_chunks - first));
      if (!TryRunJob(fn, ctx, first, n, idle)) {
        // Another caller holds the pool: do the rest here rather than wait for it.
        const bool outer = t_inside_job;
        t_inside_job = true;
        for (std::int64_t c = first; c < n_chunks; ++c) fn(ctx, c);
        t_inside_job = outer;
        return;
      }
    }
    return;
  }
  const bool outer = t_inside_job;
  t_inside_job = true;
  for (std::int64_t c = 0; c < n_chunks; ++c) fn(ctx, c);
  t_inside_job = outer;
}

bool ThreadPool::Claim(std::uint32_t gen, std::uint32_t* chunk, std::uint32_t* n) {
  std::uint64_t s = state_.load(std::memory_order_acquire);
  while (true) {
    if (GenOf(s) != gen || NextOf(s) >= CountOf(s)) return false;
    // A compare-exchange, not a fetch-add: a thread still holding an old generation must not
    // advance a newer job's counter.
    if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      *chunk = NextOf(s);
      *n = CountOf(s);
      return true;
    }
  }
}

bool ThreadPool::TryRunJob(ChunkFn fn, void* ctx, std::int64_t first, std::uint32_t n,
                           const IdlePrefetch* idle) {
  std::unique_lock<std::mutex> lock(run_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  if (!cpus_.empty()) PlaceCaller();
  job_fn_ = fn;
  job_ctx_ = ctx;
  job_first_ = first;
  for (int l = 0; l < std::min(n_threads_, IdlePrefetch::kMaxLanes); ++l) {
    const int ranges = idle == nullptr ? 0 : idle->n_ranges[l];
    for (int r = 0; r < ranges; ++r) {
      idle_[l][r].p.store(idle->ranges[l][r].p, std::memory_order_relaxed);
      idle_[l][r].bytes.store(idle->ranges[l][r].bytes, std::memory_order_relaxed);
    }
    idle_ranges_[l].store(ranges, std::memory_order_relaxed);
  }
  const std::uint32_t gen = ++generation_;
  done_.store(0, std::memory_order_relaxed);
  state_.store(Pack(gen, n, 0), std::memory_order_release);
  wake_.store(gen, std::memory_order_release);
  wake_.notify_all();  // a futex wake only when some worker sleeps

  t_inside_job = true;
  t_lane = 0;
  std::uint32_t mine = 0, chunk = 0, count = 0;
  while (Claim(gen, &chunk, &count)) {
    fn(ctx, first + chunk);
    ++mine;
  }
  t_inside_job = false;
  t_lane = -1;

  // Every chunk is claimed; wait only for those a worker is running now, reading ahead meanwhile.
  std::uint32_t done = done_.fetch_add(mine, std::memory_order_acq_rel) + mine;
  if (done != n) PrefetchWhileWaiting(0, gen, n);
  if (done != n && !SpinUntil([&] { return done_.load(std::memory_order_acquire) == n; })) {
    for (done = done_.load(std::memory_order_acquire); done != n;
         done = done_.load(std::memory_order_acquire)) {
      done_.wait(done, std::memory_order_acquire);
    }
  }
  return true;
}

void ThreadPool::PrefetchWhileWaiting(int lane, std::uint32_t gen, std::uint32_t n) {
  if (lane >= IdlePrefetch::kMaxLanes) return;
  const auto unfinished = [&] {
    return done_.load(std::memory_order_acquire) != n &&
           GenOf(state_.load(std::memory_order_acquire)) == gen;
  };
  const int ranges = idle_ranges_[lane].load(std::memory_order_relaxed);
  for (int r = 0; r < ranges; ++r) {
    const std::byte* p = idle_[lane][r].p.load(std::memory_order_relaxed);
    const std::size_t bytes = idle_[lane][r].bytes.load(std::memory_order_relaxed);
    for (std::size_t at = 0; at < bytes; at += kIdlePrefetchStep) {
      if (!unfinished()) return;
      const std::size_t end = std::min(bytes, at + kIdlePrefetchStep);
      for (std::size_t o = at; o < end; o += 64) __builtin_prefetch(p + o, 0, 3);
    }
  }
}

void ThreadPool::WorkerLoop(int lane) {
  std::uint32_t seen = 0;
  while (true) {
    if (!SpinUntil([&] { return wake_.load(std::memory_order_acquire) != seen; })) {
      wake_.wait(seen, std::memory_order_acquire);
    }
    const std::uint32_t gen = wake_.load(std::memory_order_acquire);
    if (gen == seen) continue;  // spurious wake-up
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    t_inside_job = true;
    t_lane = lane;
    std::uint32_t chunk = 0, n = 0;
    while (Claim(gen, &chunk, &n)) {
      // The claim keeps the job (and so job_fn_ / job_ctx_) alive until done_ counts it.
      job_fn_(job_ctx_, job_first_ + chunk);
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) done_.notify_all();
    }
    t_inside_job = false;
    t_lane = -1;
    // n is the job's chunk count once this thread claimed one (a worker that came too late for
    // any has nothing to wait for).
    if (n > 0) PrefetchWhileWaiting(lane, gen, n);
  }
}

}  // namespace smartgen::core
