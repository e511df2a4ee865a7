// The `auto` transfer mode's rule (DESIGN.md section 5): per request, layer-wise transfer when
// the link moves the whole KV at least as fast as prefill produces it (it then hides behind
// prefill), SmartGen otherwise. The router applies it before calling either node
// (node/router), the simulator at each arrival (src/sim), from the same inputs: the prompt's
// KV bytes, the link rate the prefill node measured (its configured rate before it has), and
// the node's prefill-time estimate.
//
// Thread-safety: pure.
#pragma once

#include <string_view>

namespace smartgen::select {

enum class AutoChoice { kLayerwise, kSmartgen };
std::string_view AutoChoiceName(AutoChoice c);  // "layerwise" | "smartgen"

struct AutoDecision {
  AutoChoice choice = AutoChoice::kSmartgen;
  double kv_link_ms = 0;  // the whole KV's time on the link (0 when the rate is unknown)
};

// link_bytes_per_s <= 0 (unknown) counts as an instant link: layerwise.
AutoDecision ChooseAutoMode(double kv_bytes, double link_bytes_per_s, double prefill_ms);

}  // namespace smartgen::select
