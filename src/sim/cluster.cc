#include "sim/cluster.h"

#include <algorithm>

#include "select/auto_mode.h"
#include "sim/decode_node.h"
#include "sim/prefill_node.h"

namespace smartgen::sim {
namespace {

class ClusterRun {
 public:
  ClusterRun(const ClusterSpec& spec, const Progress& progress)
      : spec_(spec), progress_(progress),
        prefill_cost_(spec.prefill_hw, spec.model), decode_cost_(spec.decode_hw, spec.model) {
    const ClusterOptions& o = spec_.options;
    const int n_links = o.topology == Topology::kPair     ? o.n_prefill * o.n_decode
                        : o.topology == Topology::kUplink ? o.n_prefill
                                                          : 1;
    for (int i = 0; i < n_links; ++i) {
      links_.push_back(std::make_unique<Link>(&queue_, o.link, "link" + std::to_string(i)));
    }
    PrefillNode::Hooks ph{[this](SimRequest* r) { KvProgress(r); },
                          [this](SimRequest* r) { KvChanged(r); },
                          [this](const Link* l) {
                            int n = 0;
                            for (const auto& p : prefill_) n += p->running_link() == l ? 1 : 0;
                            return n;
                          }};
    for (int i = 0; i < o.n_prefill; ++i) {
      prefill_.push_back(
          std::make_unique<PrefillNode>(i, &queue_, &prefill_cost_, &spec_.options, &spec_.stats, ph));
    }
    DecodeNode::Hooks dh{[this](SimRequest* r) { Finished(r); },
                         [this](SimRequest* r) { KvChanged(r); }};
    for (int i = 0; i < o.n_decode; ++i) {
      decode_.push_back(std::make_unique<DecodeNode>(i, &queue_, &decode_cost_, &spec_.options,
                                                     &spec_.stats, dh));
    }
  }

  SimResult Run(const std::vector<RequestSpec>& workload) {
    SimResult out;
    total_ = static_cast<int>(workload.size());
    const double block_bytes = spec_.model.KvBytesPerTokenLayer() / spec_.model.n_kv_heads *
                               spec_.options.block_tokens;
    for (std::size_t i = 0; i < workload.size(); ++i) {
      auto r = std::make_unique<SimRequest>();
      r->id = static_cast<int>(i);
      r->arrival = workload[i].arrival;
      r->prompt_tokens = workload[i].prompt_tokens;
      r->output_tokens = std::max(1, workload[i].output_tokens);
      r->block_bytes = block_bytes;
      // Whole blocks cross the link (the last block of a prompt is padded); a sliding-window
      // layer needs only the blocks of its window (the nodes' select::PromptNeededBlocks).
      r->needed = NeededBlocksFor(spec_.model, spec_.options.block_tokens, r->prompt_tokens,
                                  spec_.options.smartgen.window_aware);
      r->full_kv_bytes = static_cast<double>(r->needed.grid.total()) * block_bytes;
      r->needed_kv_bytes = static_cast<double>(r->needed.Total()) * block_bytes;
      SimRequest* raw = r.get();
      queue_.At(r->arrival, [this, raw] { Arrive(raw); });
      out.requests.push_back(std::move(r));
    }
    queue_.RunAll();
    for (const auto& r : out.requests) out.horizon = std::max(out.horizon, r->done);
    for (auto& l : links_) {
      LinkStats s;
      s.name = l->name();
      for (int p = 0; p < static_cast<int>(Path::kCount); ++p) s.bytes[p] = l->bytes_sent(static_cast<Path>(p));
      s.busy_s = l->busy_seconds();
      s.gbps = l->config().gbps;
      out.links.push_back(s);
    }
    out.events = queue_.processed();
    return out;
  }

 private:
  Link* LinkFor(int p, int d) {
    switch (spec_.options.topology) {
      case Topology::kPair: return links_[p * spec_.options.n_decode + d].get();
      case Topology::kUplink: return links_[p].get();
      case Topology::kShared: return links_[0].get();
    }
    return links_[0].get();
  }

  void Arrive(SimRequest* r) {
    // The decode node with the fewest requests assigned (arrived there and not done).
    int d = 0;
    for (int i = 1; i < static_cast<int>(decode_.size()); ++i) {
      if (assigned_[i] < assigned_[d]) d = i;
    }
    r->decode_node = d;
    ++assigned_[d];
    Mode mode = spec_.options.mode;
    if (mode == Mode::kColocated) {
      r->mode = mode;
      decode_[d]->EnqueuePrefill(r);
      return;
    }
    int p = 0;
    for (int i = 1; i < static_cast<int>(prefill_.size()); ++i) {
      if (prefill_[i]->backlog_seconds() < prefill_[p]->backlog_seconds()) p = i;
    }
    r->prefill_node = p;
    r->link = LinkFor(p, d);
    if (mode == Mode::kAuto) {
      // The router's rule (select/auto_mode.h), on what layerwise would move (the needed
      // blocks), the link's rate and the node's estimate.
      const select::AutoDecision d =
          select::ChooseAutoMode(r->needed_kv_bytes, r->link->bytes_per_second(),
                                 prefill_[p]->EstimatePrefill(r->prompt_tokens) * 1e3);
      mode = d.choice == select::AutoChoice::kLayerwise ? Mode::kLayerwise : Mode::kSmartgen;
    }
    r->mode = mode;
    prefill_[p]->Enqueue(r);
  }

  void KvProgress(SimRequest* r) {
    if (r->kv_ready >= 0 || !r->prefill_done_seen || r->pending_kv > 0) return;
    // SmartGen with the first step starts first_wait_ms after PrefillDone at the latest, even
    // with proactive blocks still on the link (node/decode SmartgenSession::Ready).
    const bool first_step = r->mode == Mode::kSmartgen && spec_.options.smartgen.first_step;
    if (r->pending_proactive > 0) {
      if (!first_step) return;
      if (!r->first_wait_over) {
        if (r->first_wait_armed) return;
        r->first_wait_armed = true;
        queue_.After(spec_.options.smartgen.first_wait_ms / 1e3, [this, r] {
          r->first_wait_over = true;
          KvProgress(r);
        });
        return;
      }
    }
    r->kv_ready = queue_.now();
    if (r->mode != Mode::kSmartgen) r->exact = queue_.now();
    KvChanged(r);
    decode_[r->decode_node]->Admit(r);
  }

  void KvChanged(SimRequest* r) {
    if (r->kv_ready >= 0 && r->decode_node >= 0 && !r->finished())
      decode_[r->decode_node]->BlocksLanded();
    if (r->exact >= 0 || r->kv_ready < 0 || r->kv == nullptr) return;
    if (r->kv->exact()) r->exact = queue_.now();
  }

  void Finished(SimRequest* r) {
    --assigned_[r->decode_node];
    if (r->mode == Mode::kSmartgen) prefill_[r->prefill_node]->StopStream(r);
    ++done_;
    if (progress_) progress_(done_, total_, queue_.now());
  }

  ClusterSpec spec_;
  Progress progress_;
  EventQueue queue_;
  CostModel prefill_cost_, decode_cost_;
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<std::unique_ptr<PrefillNode>> prefill_;
  std::vector<std::unique_ptr<DecodeNode>> decode_;
  std::vector<int> assigned_ = std::vector<int>(spec_.options.n_decode, 0);
  int done_ = 0, total_ = 0;
};

}  // namespace

Result<SimResult> RunCluster(const ClusterSpec& spec, const std::vector<RequestSpec>& workload,
                             const Progress& progress) {
  const ClusterOptions& o = spec.options;
  if (o.n_decode < 1 || (o.mode != Mode::kColocated && o.n_prefill < 1)) {
    return InvalidArgument("a cluster needs a decode node and (except colocated) a prefill node");
  }
  if (workload.empty()) return InvalidArgument("empty workload");
  if (o.mode != Mode::kColocated && !(o.link.gbps > 0)) {
    return InvalidArgument("mode {} needs a link rate > 0", ModeName(o.mode));
  }
  if (spec.model.n_layers <= 0) return InvalidArgument("model shape has no layers");
  if (o.block_tokens < 1 || o.max_batch < 1) return InvalidArgument("block_tokens and max_batch must be >= 1");
  ClusterRun run(spec, progress);
  return run.Run(workload);
}

}  // namespace smartgen::sim
