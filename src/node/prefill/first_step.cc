// PrefillNode::RunFirstStep: SmartGen's better first step on the prefill node
// (SmartgenOptions::first_step, DESIGN.md 4.1). After the prefill, token 1 goes through the
// model once more - on a copy of the request's KV, since its row would land in the last prompt
// block while the link may still be reading it - and each layer's query ranks that layer's
// blocks by exact attention mass (SmartgenPrefill::ScoreFirstStep). The most attended of every
// layer, as many as the link carries within the decode node's first-step wait, are announced per
// layer (kFirstStepManifest, before PrefillDone) and pushed ahead of everything queued.
#include "core/log.h"
#include "node/common/control_messages.h"
#include "node/prefill/prefill_node.h"
#include "node/prefill/smartgen_prefill.h"
#include "select/path_sizing.h"

namespace smartgen::node {

Result<double> PrefillNode::RunFirstStep(transfer::PeerId peer, std::uint64_t id, std::int32_t token,
                                         SmartgenPrefill& sg, const kv::SequenceKv& kv,
                                         core::Deadline deadline) {
  core::Stopwatch watch;
  const std::int64_t n_prompt = kv.n_tokens();
  const int n_layers = rt_.model->config().n_layers;
  // The step runs on a copy: token 1's row would land in the last prompt block while the link
  // may still be reading it. A pool too full for the copy skips the step (the decode node then
  // selects alone); nothing else changes.
  // As many blocks as the link carries within the decode node's first-step wait (the rest is
  // fetched when a step selects it); no cap before a rate is known.
  const std::int64_t cap = select::FirstStepBlocks(sg.options(), LinkRate(peer), WireBlockBytes(sg.push_wire()),
                                                   n_layers, kv.geometry().n_kv_heads);
  bool ran = false;
  kv::SequenceKv copy(rt_.blocks.get());
  Status room = copy.Reserve(n_prompt + 1);
  if (room.ok()) room = copy.CopyFrom(kv, n_prompt);
  if (room.ok()) {
    model::ForwardChunk c;
    c.kv = &copy;
    c.tokens = std::span<const std::int32_t>(&token, 1);
    c.on_layer_q = [&](int layer, const float* q, std::int64_t) { sg.ScoreFirstStep(layer, q, copy); };
    model::ForwardChunk chunks[1] = {c};
    const Status st = rt_.forward->Run(chunks);
    ran = st.ok();
    if (!ran) {
      SG_LOG_WARN("prefill", "request {}: first step failed ({}); the decode node selects alone", id,
                  st.ToString());
    }
  } else {
    SG_LOG_WARN("prefill", "request {}: no room for the first step ({}); the decode node selects alone",
                id, room.ToString());
  }
  const std::vector<kv::BlockKey> order = sg.TakeFirstStep(ran ? cap : 0);
  std::vector<std::vector<kv::BlockKey>> keys(n_layers);
  for (const kv::BlockKey& k : order) keys[k.layer].push_back(k);
  // Control frames overtake data: every manifest is there before the blocks and PrefillDone.
  for (int l = 0; l < n_layers; ++l) {
    SG_RETURN_IF_ERROR(SendControl(peer, ControlMessage::FirstStepManifest(id, l, keys[l])));
  }
  // Ahead of everything queued: they are what the first step needs most (behind the proactive
  // blocks still on the link, they missed the wait on slow links: kv-retrieval-tiny at 30 Mbit/s
  // answered 67 % right against 99 % colocated).
  SG_RETURN_IF_ERROR(Push(peer, transfer::RangesOf(id, order), transfer::Priority::kOnDemand,
                          deadline, sg.push_wire()));
  return watch.ElapsedMillis();
}

}  // namespace smartgen::node
