#include "kernels/team_pass.h"

#include <algorithm>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/matmul_pass.h"

namespace smartgen::kernels {
namespace {

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

void TeamPass::Reset(std::span<const MatJob> jobs, int lanes) {
  n_jobs_ = static_cast<int>(std::min<std::size_t>(jobs.size(), kMaxJobs));
  std::copy_n(jobs.begin(), n_jobs_, jobs_);
  up_ = nullptr;
  lanes_ = std::max(lanes, 1);
  std::int64_t total_rows = 0;
  std::size_t max_row_bytes = 0;
  for (int i = 0; i < n_jobs_; ++i) {
    total_rows += jobs_[i].w->rows;
    max_row_bytes = std::max(max_row_bytes, jobs_[i].w->row_bytes());
  }
  // RunSegments' grid for one token (matmul_pass.cc).
  chunk_rows_ = lanes_ > 1 ? internal::VecChunkRows(total_rows, max_row_bytes, lanes_) : total_rows;
  std::int64_t chunks = 0;
  for (int i = 0; i < n_jobs_; ++i) chunks += CeilDiv(jobs_[i].w->rows, std::max<std::int64_t>(chunk_rows_, 1));
  stage_.Reset(chunks, lanes_);
}

void TeamPass::ResetGated(const WeightView& gate, const WeightView& up, float* out, bool gelu,
                          int lanes) {
  const MatJob job{&gate, nullptr, out};
  Reset(std::span<const MatJob>(&job, 1), lanes);
  up_ = &up;
  gelu_ = gelu;
  // The gated pass's rows are the gate's; a chunk reads as many of up's.
  const std::int64_t chunk_rows =
      lanes_ > 1 ? internal::VecChunkRows(gate.rows, std::max(gate.row_bytes(), up.row_bytes()), lanes_) : gate.rows;
  chunk_rows_ = chunk_rows;
  stage_.Reset(CeilDiv(gate.rows, std::max<std::int64_t>(chunk_rows_, 1)), lanes_);
}

void TeamPass::RunFrom(std::int64_t c, const float* x) {
  using internal::Segment;
  const internal::KernelTable& table = internal::ActiveKernels();
  Segment segs[kMaxJobs];
  int n_segs = 0;
  if (up_ != nullptr) {
    Segment s = internal::MakeSegment(table, *jobs_[0].w, x, jobs_[0].y, internal::Epilogue::kSwiGlu);
    s.gated = gelu_ ? table.geglu : table.swiglu;
    const Segment u = internal::MakeSegment(table, *up_, x, jobs_[0].y, internal::Epilogue::kStore);
    s.vec_up = u.vec;
    s.mul_up = u.mul;
    s.w_up = u.w;
    s.row_bytes_up = u.row_bytes;
    s.vec_act_up = u.vec_act;
    s.mul_act_up = u.mul_act;
    if (s.prepare == nullptr) s.prepare = u.prepare;
    segs[n_segs++] = s;
  } else {
    for (int i = 0; i < n_jobs_; ++i) {
      segs[n_segs++] = internal::MakeSegment(
          table, *jobs_[i].w, x, jobs_[i].y,
          jobs_[i].accumulate ? internal::Epilogue::kAccumulate : internal::Epilogue::kStore);
    }
  }
  thread_local std::vector<internal::ActQ8> acts;
  thread_local std::vector<internal::ActPanel> panels;
  internal::PrepareSegmentActs(segs, n_segs, 1, acts, panels);
  std::int64_t first[kMaxJobs + 1] = {};
  for (int i = 0; i < n_segs; ++i) first[i + 1] = first[i] + CeilDiv(segs[i].rows, chunk_rows_);
  for (; c >= 0; c = stage_.Next()) {
    int i = 0;
    while (i + 1 < n_segs && first[i + 1] <= c) ++i;
    const std::int64_t r0 = (c - first[i]) * chunk_rows_;
    internal::RunChunk(table, segs[i], r0, std::min(segs[i].rows, r0 + chunk_rows_), 0, 1);
    stage_.Finish();
  }
}

void TeamPass::Wait(const NextPass& next) const {
  if (stage_.Done()) return;
  const core::IdlePrefetch plan = internal::PlanIdlePrefetch(next, lanes_);
  stage_.Wait(&plan);
}

}  // namespace smartgen::kernels
