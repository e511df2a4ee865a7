#include "sim/workload.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

namespace smartgen::sim {
namespace {

struct Lengths {
  explicit Lengths(const WorkloadOptions& o) : o_(o), rng_(o.seed) {}
  RequestSpec Draw(Seconds t) {
    RequestSpec r;
    r.arrival = t;
    r.prompt_tokens = o_.prompt_max > o_.prompt_min
                          ? std::uniform_int_distribution<std::int64_t>(o_.prompt_min, o_.prompt_max)(rng_)
                          : o_.prompt_min;
    r.output_tokens = o_.output_max > o_.output_min
                          ? std::uniform_int_distribution<int>(o_.output_min, o_.output_max)(rng_)
                          : o_.output_min;
    return r;
  }
  WorkloadOptions o_;
  std::mt19937_64 rng_;
};

}  // namespace

std::vector<RequestSpec> FixedBatch(int n, Seconds interval, const WorkloadOptions& o) {
  Lengths lengths(o);
  std::vector<RequestSpec> out;
  for (int i = 0; i < n; ++i) out.push_back(lengths.Draw(i * interval));
  return out;
}

std::vector<RequestSpec> Poisson(double rate_per_s, int n, const WorkloadOptions& o) {
  Lengths lengths(o);
  std::mt19937_64 rng(o.seed * 7919 + 1);
  std::exponential_distribution<double> gap(rate_per_s > 0 ? rate_per_s : 1.0);
  std::vector<RequestSpec> out;
  Seconds t = 0;
  for (int i = 0; i < n; ++i) {
    t += gap(rng);
    out.push_back(lengths.Draw(t));
  }
  return out;
}

Result<std::vector<RequestSpec>> ReadTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open trace {}", path);
  std::vector<RequestSpec> out;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream fields(line);
    RequestSpec r;
    if (!(fields >> r.arrival)) continue;  // blank or comment
    if (!(fields >> r.prompt_tokens >> r.output_tokens) || r.arrival < 0 || r.prompt_tokens <= 0 ||
        r.output_tokens <= 0) {
      return InvalidArgument("{}:{}: expected 'arrival_s prompt_tokens output_tokens'", path, line_no);
    }
    out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RequestSpec& a, const RequestSpec& b) { return a.arrival < b.arrival; });
  return out;
}

}  // namespace smartgen::sim
