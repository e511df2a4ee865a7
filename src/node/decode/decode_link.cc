// The decode node's side of the KV link: control messages from prefill nodes (each request
// listens to one link: the one whose PrefillStarted proved its KV ticket), links that go down,
// on-demand pulls and the local recompute of KV the link no longer brings. See decode_node.h.
#include <cstring>

#include "core/log.h"
#include "node/decode/decode_node.h"

namespace smartgen::node {

void DecodeNode::Reject(transfer::PeerId peer, std::uint32_t type, const Status& why) {
  bad_control_->Increment();
  SG_LOG_WARN("decode", "{}: rejected a control message of type {} from peer {}: {}", config_.name,
              type, peer.value, why.ToString());
}

namespace {

// Whether a PrefillStarted names all of r's id and carries the ticket the router gave r.
bool ProvesTicket(const DecodeRequest& r, const ControlMessage& m) {
  return r.call.kv_ticket.valid() && m.request_id_hi == r.call.request_id.hi &&
         SecretEquals(m.ticket, r.call.kv_ticket);
}

}  // namespace

void DecodeNode::OnControlArrived(transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes) {
  if (type != static_cast<std::uint32_t>(ControlType::kPrefillStarted)) return;
  auto m = DecodeControl(type, bytes);
  if (!m.ok()) return;  // OnControl rejects it
  RequestPtr r = FindRequest(m->request_id);
  if (r == nullptr || r->entry == nullptr || !ProvesTicket(*r, *m)) return;
  static_cast<void>(store_.Bind(m->request_id, peer));  // false: tied elsewhere (OnControl says so)
}

void DecodeNode::OnControl(transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes) {
  auto m = DecodeControl(type, bytes);
  if (!m.ok()) return Reject(peer, type, m.status());
  if (m->type == ControlType::kRequested) return Reject(peer, type, InvalidArgument("decode nodes do not serve blocks"));
  RequestPtr r = FindRequest(m->request_id);
  if (r == nullptr) {
    // Finished or cancelled here already: let the prefill node free the KV.
    if (m->type == ControlType::kPrefillDone) endpoint_->FinishRequest(peer, m->request_id).IgnoreError();
    return;
  }
  if (r->call.mode == TransferMode::kColocated) {
    return Reject(peer, type, InvalidArgument("request {} is colocated", m->request_id));
  }
  std::lock_guard<std::mutex> lock(r->mu);
  // A request listens to one link: the one whose PrefillStarted proves the ticket the router
  // gave it at registration. Nothing else binds it, so a link that speaks first wins nothing.
  if (m->type == ControlType::kPrefillStarted && !r->peer) {
    if (!ProvesTicket(*r, *m)) {
      return Reject(peer, type, PermissionDenied("request {}: prefill_started without the request's KV ticket",
                                                 m->request_id));
    }
    if (!store_.Bind(m->request_id, peer)) {
      return Reject(peer, type, PermissionDenied("request {} takes KV from another link", m->request_id));
    }
    r->peer = peer;
  }
  if (!r->peer || *r->peer != peer) {
    return Reject(peer, type, PermissionDenied("request {} is not tied to this KV link", m->request_id));
  }
  r->state.Progress(core::NowNanos());
  if (r->state.state() == DecodeState::kRegistered) Move(*r, DecodeState::kAwaitingKv);
  Status st;
  switch (m->type) {
    case ControlType::kPrefillStarted: break;
    case ControlType::kPrefillDone:
      if (m->n_prompt != static_cast<std::int64_t>(r->call.spec.prompt.size()) ||
          m->first_token >= rt_.model->config().n_vocab) {
        st = DataLoss("prefill_done for {} prompt tokens, token {}", m->n_prompt, m->first_token);
        break;
      }
      if (r->prefill_done) break;
      if (r->call.spec.n > 1 && !r->choice_tokens_seen) {
        st = DataLoss("prefill_done of {} choices without their first tokens", r->call.spec.n);
        break;
      }
      r->prefill_done = true;
      r->first_token = m->first_token;
      r->prefill_done_at = core::NowNanos();
      // Token 1 travels one way: from the prefill node over the KV link (control frames go
      // before data frames), then to the router on this request's stream, at once.
      // (Under teacher forcing the forced token is emitted; the engine records the prefill
      // node's own pick.)
      // Its log-probabilities are the prefill node's sample's (none under teacher forcing).
      r->events->Push(
          ToJson(DecodeEvent::Token(0, r->call.spec.Emitted(0, m->first_token),
                                    m->first_logprobs && !r->call.spec.teacher_forced()
                                        ? &*m->first_logprobs
                                        : nullptr))
              .dump());
      for (int i = 1; i < r->call.spec.n; ++i) {
        const DecodeRequest::Choice& c = r->choices[i - 1];
        r->events->Push(
            ToJson(DecodeEvent::Token(0, c.first_token,
                                      c.first_logprobs ? &*c.first_logprobs : nullptr, i))
                .dump());
      }
      engine_->Wake();
      break;
    case ControlType::kChoiceTokens: {
      const int n = r->call.spec.n;
      const bool with_logprobs = r->call.spec.sampling.logprobs >= 0;
      if (std::ssize(m->choice_tokens) != n - 1 ||
          (!m->choice_logprobs.empty() && m->choice_logprobs.size() != m->choice_tokens.size())) {
        st = InvalidArgument("choice_tokens with {} tokens for a request of {} choices",
                             m->choice_tokens.size(), n);
        break;
      }
      for (std::size_t i = 0; st.ok() && i < m->choice_tokens.size(); ++i) {
        if (m->choice_tokens[i] >= rt_.model->config().n_vocab) {
          st = DataLoss("choice_tokens with token {}", m->choice_tokens[i]);
        }
      }
      if (!st.ok() || r->choice_tokens_seen || r->prefill_done) break;
      for (std::size_t i = 0; i < m->choice_tokens.size(); ++i) {
        r->choices[i].first_token = m->choice_tokens[i];
        if (with_logprobs && !m->choice_logprobs.empty())
          r->choices[i].first_logprobs = m->choice_logprobs[i];
      }
      r->choice_tokens_seen = true;
      break;
    }
    case ControlType::kPrefillFailed:
      WantFallback(*r, "the prefill node failed: " + m->failure.ToString());
      break;
    case ControlType::kSummaries:
    case ControlType::kProactiveManifest:
    case ControlType::kFirstStepManifest:
      if (!r->smartgen) {
        st = InvalidArgument("request {} is not a SmartGen request", m->request_id);
      } else {
        st = m->type == ControlType::kSummaries           ? r->smartgen->AddSummaries(m->summaries)
             : m->type == ControlType::kProactiveManifest ? r->smartgen->AddManifest(m->layer, m->blocks)
                                                          : r->smartgen->AddFirstStep(m->layer, m->blocks);
        if (st.ok()) engine_->Wake();
      }
      break;
    case ControlType::kRequested: break;  // refused above
  }
  if (!st.ok()) Reject(peer, type, st);
}

void DecodeNode::OnPeerDown(transfer::PeerId peer, const Status& why) {
  std::vector<RequestPtr> affected;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, r] : requests_) affected.push_back(r);
  }
  for (auto& r : affected) {
    std::lock_guard<std::mutex> lock(r->mu);
    if (r->peer != peer) continue;
    const DecodeState s = r->state.state();
    if (s == DecodeState::kRegistered || s == DecodeState::kAwaitingKv) {
      WantFallback(*r, "KV link lost: " + why.ToString());
    } else if (r->smartgen && s == DecodeState::kRunning) {
      r->smartgen->OnLinkDown();  // decoding: the session recomputes what is missing
      r->link_lost = true;        // (and n > 1 choices waiting for the KV, decode_choices.cc)
    }
  }
}

Status DecodeNode::Fetch(DecodeRequest& r, const std::vector<kv::BlockKey>& keys,
                         transfer::WireFormat wire, transfer::Priority priority) {
  std::optional<transfer::PeerId> peer;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    peer = r.peer;
  }
  if (!peer) return Unavailable("request {} has no KV peer yet", r.id());
  const std::uint64_t id = r.id();
  if (wire == transfer::WireFormat::kNative) {
    endpoint_
        ->SendControl(*peer, static_cast<std::uint32_t>(ControlType::kRequested),
                      EncodeControl(ControlMessage::Requested(id, keys)))
        .IgnoreError();
  }
  transfer::TransferRequest t;
  t.direction = transfer::Direction::kPull;
  t.priority = priority;
  t.deadline = core::Deadline::After(r.call.timeout_ms * core::kNanosPerMilli);
  t.ranges = transfer::RangesOf(id, keys);
  t.wire = wire;
  SG_ASSIGN_OR_RETURN(transfer::TransferHandle handle, endpoint_->Post(*peer, t));
  endpoint_->Release(handle);  // arrival is tracked by residency
  return Status::Ok();
}

Status DecodeNode::RecomputeMissing(DecodeRequest& r) {
  // Runs inside a decode step: a second Forward (its own scratch) computes the prompt into a
  // scratch sequence, and every block still absent is copied over.
  const std::uint64_t id = r.id();
  endpoint_->CancelRequest(id);
  // From here nothing from the link writes into this request's KV (a frame in flight may still
  // be landing: wait for it), so the copies below cannot race with the receiver.
  SG_RETURN_IF_ERROR(store_.Detach(id, core::Deadline::After(core::Seconds(config_.step_timeout_s))));
  fallbacks_->Increment();
  SG_LOG_WARN("decode", "request {}: KV link lost or too slow mid-decode; recomputing the missing KV", id);
  kv::SequenceKv scratch(rt_.blocks.get());
  SG_RETURN_IF_ERROR(recompute_forward_->RunOne(&scratch, r.call.spec.prompt, nullptr));
  kv::Residency& residency = r.entry->residency;
  const kv::KvGeometry& g = rt_.blocks->geometry();
  for (int l = 0; l < g.n_layers; ++l) {
    for (int h = 0; h < g.n_kv_heads; ++h) {
      // Only what the decode needs: a window layer's blocks before its window stay unused.
      for (std::int64_t b = residency.first_needed(l); b < residency.n_blocks(); ++b) {
        if (residency.present(l, h, b)) continue;
        // Only the prompt's rows: the last block may also hold generated tokens' rows.
        const std::int64_t rows = std::min<std::int64_t>(g.block_tokens, r.entry->n_prompt - b * g.block_tokens);
        std::byte* dst = r.entry->kv.BlockData(l, h, b);
        const std::byte* src = scratch.BlockData(l, h, b);
        std::memcpy(dst, src, rows * g.row_bytes());
        std::memcpy(dst + g.half_block_bytes(), src + g.half_block_bytes(), rows * g.row_bytes());
        residency.MarkPresent(l, h, b);
      }
    }
  }
  std::lock_guard<std::mutex> lock(r.mu);
  r.recomputed = true;
  return Status::Ok();
}

}  // namespace smartgen::node
