#include "kernels/team_pass.h"

#include <algorithm>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/matmul_pass.h"

namespace smartgen::kernels {
namespace {

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

void TeamPass::Reset(std::span<const MatJob> jobs, int lanes, const core::LaneShares* shares) {
  n_jobs_ = static_cast<int>(std::min<std::size_t>(jobs.size(), kMaxJobs));
  std::copy_n(jobs.begin(), n_jobs_, jobs_);
  up_ = nullptr;
  shares_ = shares;
  Plan(lanes);
}

void TeamPass::ResetGated(const WeightView& gate, const WeightView& up, float* out, bool gelu,
                          int lanes) {
  jobs_[0] = MatJob{&gate, nullptr, out};
  n_jobs_ = 1;
  up_ = &up;  // a chunk of gate rows reads as many of up's
  shares_ = nullptr;
  gelu_ = gelu;
  Plan(lanes);
}

void TeamPass::Plan(int lanes) {
  lanes_ = std::max(lanes, 1);
  std::int64_t total_rows = 0;
  std::size_t max_row_bytes = up_ == nullptr ? 0 : up_->row_bytes();
  for (int i = 0; i < n_jobs_; ++i) {
    total_rows += jobs_[i].w->rows;
    max_row_bytes = std::max(max_row_bytes, jobs_[i].w->row_bytes());
  }
  // RunSegments' grid for one token (matmul_pass.cc).
  chunk_rows_ = lanes_ > 1 ? internal::VecChunkRows(total_rows, max_row_bytes, lanes_)
                           : std::max<std::int64_t>(total_rows, 1);
  std::int64_t chunks = 0;
  for (int i = 0; i < n_jobs_; ++i) chunks += CeilDiv(jobs_[i].w->rows, chunk_rows_);
  own_run_ = internal::VecOwnRun(chunk_rows_, max_row_bytes);
  stage_.Reset(chunks, lanes_, shares_);
}

void TeamPass::RunFrom(core::LaneClaims::Run run, const float* x) {
  using internal::Segment;
  const internal::KernelTable& table = internal::ActiveKernels();
  Segment segs[kMaxJobs];
  int n_segs = 0;
  if (up_ != nullptr) {
    segs[n_segs++] = internal::MakeGatedSegment(table, *jobs_[0].w, *up_, x, jobs_[0].y,
                                                 gelu_ ? table.geglu : table.swiglu);
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
  for (int i = 1; i < n_segs; ++i) {
    segs[i].first_chunk = segs[i - 1].first_chunk + CeilDiv(segs[i - 1].rows, chunk_rows_);
  }
  for (; run.count > 0; run = stage_.NextRun(own_run_)) {
    internal::RunRowChunks(table, segs, n_segs, chunk_rows_, run.first, run.count);
    stage_.Finish(static_cast<std::uint32_t>(run.count));
  }
}

void TeamPass::Wait(const NextPass& next) const {
  if (stage_.Done()) return;
  const core::IdlePrefetch plan = internal::PlanIdlePrefetch(next, lanes_, shares_);
  stage_.Wait(&plan);
}

}  // namespace smartgen::kernels
