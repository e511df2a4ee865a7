#include "core/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace smartgen::core {
namespace {

thread_local bool t_inside_job = false;

inline void CpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Iterations to spin before sleeping: long enough to catch back-to-back kernel launches in a
// forward pass (microseconds apart), short enough not to steal a shared core for long.
constexpr int kSpinIterations = 20000;

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::RunErased(JobFn fn, void* ctx) {
  if (t_inside_job || n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  std::lock_guard<std::mutex> lock(run_mutex_);
  job_fn_ = fn;
  job_ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();

  t_inside_job = true;
  fn(ctx, 0, n_threads_);
  t_inside_job = false;

  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinIterations) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::WorkerLoop(int index) {
  // Workers start before any Run(), at generation 0; reading the counter here instead would
  // miss a job published before this thread got scheduled.
  std::uint32_t seen = 0;
  while (true) {
    std::uint32_t current = generation_.load(std::memory_order_acquire);
    for (int spins = 0; current == seen && spins < kSpinIterations; ++spins) {
      CpuRelax();
      current = generation_.load(std::memory_order_acquire);
    }
    while (current == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      current = generation_.load(std::memory_order_acquire);
    }
    seen = current;
    if (stop_.load(std::memory_order_acquire)) return;
    t_inside_job = true;
    job_fn_(job_ctx_, index, n_threads_);
    t_inside_job = false;
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace smartgen::core
