// ThreadPool: a fixed set of threads for data-parallel kernels (GEMM, attention, prefill).
//
// The calling thread takes part as thread 0, so ThreadPool(2) starts one worker. Run() hands the
// same function to every thread and returns when all have finished; kernels split their work by
// thread index. Workers spin briefly after a job, then sleep on a futex (std::atomic::wait), so
// an idle pool costs no CPU.
//
// Thread-safety: Run() may be called from any thread; concurrent calls are serialised. A Run()
// from inside a job (nested parallelism) executes inline on the calling thread as (0, 1).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace smartgen::core {

class ThreadPool {
 public:
  // n_threads >= 1 threads in all, the caller included.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(thread_index, n_threads) once on each thread; blocks until all return.
  template <typename Fn>
  void Run(Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    RunErased([](void* ctx, int t, int n) { (*static_cast<F*>(ctx))(t, n); },
              const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Splits [0, n) into contiguous chunks, one per thread (the first threads take the
  // remainder), and calls fn(begin, end) for each non-empty chunk.
  template <typename Fn>
  void ParallelFor(std::int64_t n, Fn&& fn) {
    if (n <= 0) return;
    Run([&](int t, int nt) {
      const auto [begin, end] = SplitRange(n, t, nt);
      if (begin < end) fn(begin, end);
    });
  }

  // The chunk [begin, end) of [0, n) that thread t of nt takes.
  static std::pair<std::int64_t, std::int64_t> SplitRange(std::int64_t n, int t, int nt) {
    const std::int64_t base = n / nt, extra = n % nt;
    const std::int64_t begin = t * base + (t < extra ? t : extra);
    return {begin, begin + base + (t < extra ? 1 : 0)};
  }

 private:
  using JobFn = void (*)(void* ctx, int thread, int n_threads);
  void RunErased(JobFn fn, void* ctx);
  void WorkerLoop(int index);

  const int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // serialises Run() callers

  // Current job, published by bumping generation_.
  JobFn job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
  std::atomic<std::uint32_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace smartgen::core
