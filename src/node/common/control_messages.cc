#include "node/common/control_messages.h"

#include <cstring>

namespace smartgen::node {
namespace {

constexpr std::size_t kMaxFailureText = 4096;

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void PutBytes(std::span<const std::byte> bytes) { out.insert(out.end(), bytes.begin(), bytes.end()); }
  std::vector<std::byte> out;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  template <typename T>
  Status Get(T* v) {
    if (left() < sizeof(T)) return DataLoss("control message truncated at byte {}", at_);
    std::memcpy(v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return Status::Ok();
  }
  std::span<const std::byte> Take(std::size_t n) {
    auto s = in_.subspan(at_, n);
    at_ += n;
    return s;
  }
  std::span<const std::byte> Rest() { return Take(left()); }
  std::size_t left() const { return in_.size() - at_; }
  Status End(ControlType type) const {
    if (left() != 0) return DataLoss("{} message has {} trailing bytes", ControlTypeName(type), left());
    return Status::Ok();
  }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

// n x `fields` u32 words follow; the count must match the bytes exactly (no huge allocations).
Status GetKeys(Reader& r, ControlType type, int fields, int layer,
               std::vector<kv::BlockKey>* keys) {
  std::uint32_t n = 0;
  SG_RETURN_IF_ERROR(r.Get(&n));
  if (r.left() != std::size_t{n} * 4 * fields) {
    return DataLoss("{} message of {} blocks has {} bytes", ControlTypeName(type), n, r.left());
  }
  keys->clear();
  keys->reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t w[3] = {static_cast<std::uint32_t>(layer), 0, 0};
    for (int f = 3 - fields; f < 3; ++f) SG_RETURN_IF_ERROR(r.Get(&w[f]));
    keys->push_back({static_cast<std::int32_t>(w[0]), static_cast<std::int32_t>(w[1]),
                     static_cast<std::int32_t>(w[2])});
  }
  return Status::Ok();
}

void PutLogprobs(Writer& w, const model::TokenLogprobs& lp) {
  w.Put(lp.logprob);
  w.Put(static_cast<std::uint32_t>(lp.top.size()));
  for (const auto& [id, value] : lp.top) {
    w.Put(id);
    w.Put(value);
  }
}

// f32 logprob, u32 n, n x (i32 id, f32 logprob); `exact`: those bytes are all that is left.
Status GetLogprobs(Reader& r, bool exact, model::TokenLogprobs* lp) {
  std::uint32_t n = 0;
  SG_RETURN_IF_ERROR(r.Get(&lp->logprob));
  SG_RETURN_IF_ERROR(r.Get(&n));
  if (n > static_cast<std::uint32_t>(model::kMaxTopLogprobs) || r.left() < n * 8u ||
      (exact && r.left() != n * 8u)) {
    return DataLoss("{} top log-probabilities in {} bytes", n, r.left());
  }
  lp->top.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    std::int32_t id = 0;
    float value = 0;
    SG_RETURN_IF_ERROR(r.Get(&id));
    SG_RETURN_IF_ERROR(r.Get(&value));
    lp->top.emplace_back(id, value);
  }
  return Status::Ok();
}

ControlMessage Header(ControlType type, std::uint64_t id) {
  ControlMessage m;
  m.type = type;
  m.request_id = id;
  return m;
}

}  // namespace

std::string_view ControlTypeName(ControlType type) {
  switch (type) {
    case ControlType::kPrefillDone: return "prefill_done";
    case ControlType::kPrefillFailed: return "prefill_failed";
    case ControlType::kSummaries: return "summaries";
    case ControlType::kProactiveManifest: return "proactive_manifest";
    case ControlType::kRequested: return "requested";
    case ControlType::kPrefillStarted: return "prefill_started";
    case ControlType::kFirstStepManifest: return "first_step_manifest";
    case ControlType::kChoiceTokens:
      return "choice_tokens";
  }
  return "unknown";
}

ControlMessage ControlMessage::PrefillStarted(const RequestId& id, const KvTicket& ticket) {
  ControlMessage m = Header(ControlType::kPrefillStarted, id.link_handle());
  m.request_id_hi = id.hi;
  m.ticket = ticket;
  return m;
}

ControlMessage ControlMessage::PrefillDone(std::uint64_t id, std::int32_t first_token,
                                           std::int64_t n_prompt,
                                           const model::TokenLogprobs* first_logprobs) {
  ControlMessage m = Header(ControlType::kPrefillDone, id);
  if (first_logprobs) m.first_logprobs = *first_logprobs;
  m.first_token = first_token;
  m.n_prompt = n_prompt;
  return m;
}

ControlMessage ControlMessage::PrefillFailed(std::uint64_t id, const Status& why) {
  ControlMessage m = Header(ControlType::kPrefillFailed, id);
  m.failure = why;
  return m;
}

ControlMessage ControlMessage::Summaries(std::uint64_t id, std::span<const std::byte> summaries) {
  ControlMessage m = Header(ControlType::kSummaries, id);
  m.summaries = summaries;
  return m;
}

ControlMessage ControlMessage::Manifest(std::uint64_t id, int layer,
                                        std::vector<kv::BlockKey> blocks) {
  ControlMessage m = Header(ControlType::kProactiveManifest, id);
  m.layer = layer;
  m.blocks = std::move(blocks);
  return m;
}

ControlMessage ControlMessage::FirstStepManifest(std::uint64_t id, int layer,
                                                 std::vector<kv::BlockKey> blocks) {
  ControlMessage m = Manifest(id, layer, std::move(blocks));
  m.type = ControlType::kFirstStepManifest;
  return m;
}

ControlMessage ControlMessage::Requested(std::uint64_t id, std::vector<kv::BlockKey> blocks) {
  ControlMessage m = Header(ControlType::kRequested, id);
  m.blocks = std::move(blocks);
  return m;
}

ControlMessage ControlMessage::ChoiceTokens(std::uint64_t id, std::vector<std::int32_t> tokens,
                                            std::vector<model::TokenLogprobs> logprobs) {
  ControlMessage m = Header(ControlType::kChoiceTokens, id);
  m.choice_tokens = std::move(tokens);
  m.choice_logprobs = std::move(logprobs);
  return m;
}

std::vector<std::byte> EncodeControl(const ControlMessage& m) {
  Writer w;
  w.Put(m.request_id);
  switch (m.type) {
    case ControlType::kPrefillStarted:
      w.Put(m.request_id_hi);
      w.Put(m.ticket.hi);
      w.Put(m.ticket.lo);
      break;
    case ControlType::kPrefillDone:
      w.Put(m.first_token);
      w.Put(m.n_prompt);
      if (m.first_logprobs) PutLogprobs(w, *m.first_logprobs);
      break;
    case ControlType::kChoiceTokens:
      w.Put(static_cast<std::uint32_t>(m.choice_tokens.size()));
      for (std::int32_t t : m.choice_tokens) w.Put(t);
      w.Put(static_cast<std::uint8_t>(m.choice_logprobs.empty() ? 0 : 1));
      for (const model::TokenLogprobs& lp : m.choice_logprobs) PutLogprobs(w, lp);
      break;
    case ControlType::kPrefillFailed: {
      const std::string text = m.failure.ToString().substr(0, kMaxFailureText);
      w.Put(static_cast<std::uint32_t>(m.failure.code()));
      w.Put(static_cast<std::uint32_t>(text.size()));
      w.PutBytes(std::as_bytes(std::span(text.data(), text.size())));
      break;
    }
    case ControlType::kSummaries: w.PutBytes(m.summaries); break;
    case ControlType::kProactiveManifest:
    case ControlType::kFirstStepManifest:
      w.Put(static_cast<std::uint32_t>(m.layer));
      w.Put(static_cast<std::uint32_t>(m.blocks.size()));
      for (const auto& k : m.blocks) {
        w.Put(static_cast<std::uint32_t>(k.kv_head));
        w.Put(static_cast<std::uint32_t>(k.block));
      }
      break;
    case ControlType::kRequested:
      w.Put(static_cast<std::uint32_t>(m.blocks.size()));
      for (const auto& k : m.blocks) {
        w.Put(static_cast<std::uint32_t>(k.layer));
        w.Put(static_cast<std::uint32_t>(k.kv_head));
        w.Put(static_cast<std::uint32_t>(k.block));
      }
      break;
  }
  return std::move(w.out);
}

Result<ControlMessage> DecodeControl(std::uint32_t type, std::span<const std::byte> bytes) {
  if (type < 1 || type > static_cast<std::uint32_t>(ControlType::kChoiceTokens)) {
    return DataLoss("unknown control message type {}", type);
  }
  ControlMessage m;
  m.type = static_cast<ControlType>(type);
  Reader r(bytes);
  SG_RETURN_IF_ERROR(r.Get(&m.request_id));
  switch (m.type) {
    case ControlType::kPrefillStarted:
      SG_RETURN_IF_ERROR(r.Get(&m.request_id_hi));
      SG_RETURN_IF_ERROR(r.Get(&m.ticket.hi));
      SG_RETURN_IF_ERROR(r.Get(&m.ticket.lo));
      break;
    case ControlType::kPrefillDone:
      SG_RETURN_IF_ERROR(r.Get(&m.first_token));
      SG_RETURN_IF_ERROR(r.Get(&m.n_prompt));
      if (m.first_token < 0 || m.n_prompt <= 0) {
        return DataLoss("prefill_done with token {} and {} prompt tokens", m.first_token, m.n_prompt);
      }
      if (r.left() > 0) {  // token 1's log-probabilities
        model::TokenLogprobs lp;
        SG_RETURN_IF_ERROR(GetLogprobs(r, /*exact=*/true, &lp).WithContext("prefill_done"));
        m.first_logprobs = std::move(lp);
      }
      break;
    case ControlType::kChoiceTokens: {
      std::uint32_t n = 0;
      SG_RETURN_IF_ERROR(r.Get(&n));
      if (n > 1024 || r.left() < std::size_t{n} * 4 + 1) {
        return DataLoss("choice_tokens of {} tokens in {} bytes", n, r.left());
      }
      m.choice_tokens.resize(n);
      for (std::int32_t& t : m.choice_tokens) {
        SG_RETURN_IF_ERROR(r.Get(&t));
        if (t < 0) return DataLoss("choice_tokens with token {}", t);
      }
      std::uint8_t has_logprobs = 0;
      SG_RETURN_IF_ERROR(r.Get(&has_logprobs));
      if (has_logprobs > 1 || (has_logprobs == 1 && n == 0)) {
        return DataLoss("choice_tokens of {} tokens with log-probability flag {}", n, has_logprobs);
      }
      if (has_logprobs) {
        m.choice_logprobs.resize(n);
        for (model::TokenLogprobs& lp : m.choice_logprobs) {
          SG_RETURN_IF_ERROR(GetLogprobs(r, /*exact=*/false, &lp).WithContext("choice_tokens"));
        }
      }
      break;
    }
    case ControlType::kPrefillFailed: {
      std::uint32_t code = 0, n = 0;
      SG_RETURN_IF_ERROR(r.Get(&code));
      SG_RETURN_IF_ERROR(r.Get(&n));
      if (n > kMaxFailureText || r.left() != n) return DataLoss("prefill_failed text of {} bytes", n);
      const auto text = r.Take(n);
      const StatusCode c = code >= 1 && code <= static_cast<std::uint32_t>(StatusCode::kInternal)
                               ? static_cast<StatusCode>(code)
                               : StatusCode::kInternal;
      m.failure = Status(c, std::string(reinterpret_cast<const char*>(text.data()), text.size()));
      break;
    }
    case ControlType::kSummaries: m.summaries = r.Rest(); break;
    case ControlType::kProactiveManifest:
    case ControlType::kFirstStepManifest: {
      std::uint32_t layer = 0;
      SG_RETURN_IF_ERROR(r.Get(&layer));
      if (layer > (1u << 16)) return DataLoss("{} of layer {}", ControlTypeName(m.type), layer);
      m.layer = static_cast<int>(layer);
      SG_RETURN_IF_ERROR(GetKeys(r, m.type, 2, m.layer, &m.blocks));
      break;
    }
    case ControlType::kRequested: SG_RETURN_IF_ERROR(GetKeys(r, m.type, 3, 0, &m.blocks)); break;
  }
  SG_RETURN_IF_ERROR(r.End(m.type));
  return m;
}

}  // namespace smartgen::node
