// TeamPass: a single-token matrix pass - what MatMulMany or MatMulSwiGlu does for one token -
// run by the threads of one pool job that is already under way (core::TeamStage), rather than as
// a pool job of its own. Each thread prepares its own copy of the pass's activations (the input
// may be the thread's own copy too), then claims chunks of rows, lane by lane, its own lane's in
// runs read in one kernel call each, as RunSegments does; Wait returns when every chunk is done.
// model/forward_team.cc chains a decode layer's passes this way, so the threads go from one pass
// to the next without the pool's hand-off and split the work between passes instead of leaving it
// to the caller.
//
// Every output element is computed as MatMulMany / MatMulSwiGlu compute it for one token (the
// same kernels, chunk grid and prepared activations), so results are bit for bit theirs.
#pragma once

#include <cstdint>
#include <span>

#include "core/idle_prefetch.h"
#include "core/team_stage.h"
#include "kernels/matmul.h"

namespace smartgen::kernels {

class TeamPass {
 public:
  // The pass of up to kMaxJobs products of one token (jobs' x is ignored: Work's input is used),
  // for `lanes` threads. Not while a job uses the pass.
  static constexpr int kMaxJobs = 3;
  // With `shares` (not null; it must outlive the pass's use), the lanes are sized by them
  // (core::LaneShares), and so are those of the next pass Wait() prefetches.
  void Reset(std::span<const MatJob> jobs, int lanes, const core::LaneShares* shares = nullptr);
  // The gated FFN input: out = act(gate x) * (up x), act SiLU, or GELU (tanh form) when `gelu`.
  void ResetGated(const WeightView& gate, const WeightView& up, float* out, bool gelu, int lanes);

  // On each thread of the job: claims a chunk, and if it got one, runs it and then every chunk it
  // can claim on the input input() returns (cols floats; called once, after the first claim, so
  // a thread reads the input only while the pass is unfinished and nobody can be past it writing
  // what the input was made from).
  template <typename Input>
  void Work(Input&& input) {
    const core::LaneClaims::Run first = stage_.NextRun(own_run_);
    if (first.count > 0) RunFrom(first, input());
  }
  // Whether every chunk is done (acquires their writes when true).
  bool Done() const { return stage_.Done(); }
  // Returns when every chunk is done; meanwhile the thread prefetches its lane's start of `next`
  // (the pass that follows; may be empty).
  void Wait(const NextPass& next) const;

 private:
  // The chunk grid of jobs_ (and up_) for `lanes` threads, and the stage over it.
  void Plan(int lanes);
  // Runs the chunks `first`, which this thread claimed, and then every chunk it can claim.
  void RunFrom(core::LaneClaims::Run first, const float* x);

  core::TeamStage stage_;
  MatJob jobs_[kMaxJobs];
  int n_jobs_ = 0;
  const WeightView* up_ = nullptr;  // gated passes: jobs_[0] is the gate
  bool gelu_ = false;
  int lanes_ = 1;
  const core::LaneShares* shares_ = nullptr;
  std::int64_t chunk_rows_ = 0;
  std::int64_t own_run_ = 1;  // chunks of its own lane a thread claims at once
};

}  // namespace smartgen::kernels
