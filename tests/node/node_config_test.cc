// The addresses a node binds and hands to peers (issue 11): --advertise, IPv6 literals, and the
// token rule for addresses off loopback.
#include <gtest/gtest.h>

#include "node/common/node_config.h"

#include "core/mapped_file.h"
#include "model/synthetic_model.h"

namespace smartgen::node {
namespace {

TEST(NodeAdvertise, DefaultsToTheBoundAddress) {
  auto a = AdvertisedAddress("", "10.0.0.3:9201");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, "10.0.0.3:9201");
  auto v6 = AdvertisedAddress("", "[::1]:9201");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(*v6, "[::1]:9201");
}

TEST(NodeAdvertise, ReplacesHostAndKeepsTheBoundPortWhereNoneIsGiven) {
  struct Case {
    const char* advertise;
    const char* want;
  } cases[] = {
      {"10.0.0.3:7000", "10.0.0.3:7000"},   {"10.0.0.3", "10.0.0.3:9201"},
      {"10.0.0.3:0", "10.0.0.3:9201"},      {"decode-1.internal", "decode-1.internal:9201"},
      {"[fd00::3]", "[fd00::3]:9201"},      {"[fd00::3]:7000", "[fd00::3]:7000"},
      {"fd00::3", "[fd00::3]:9201"},  // bare IPv6: a host (CLI11 strips a lone "[...]")
  };
  for (const Case& c : cases) {
    auto a = AdvertisedAddress(c.advertise, "0.0.0.0:9201");
    ASSERT_TRUE(a.ok()) << c.advertise << ": " << a.status().ToString();
    EXPECT_EQ(*a, c.want) << c.advertise;
    auto from_v6 = AdvertisedAddress(c.advertise, "[::]:9201");
    ASSERT_TRUE(from_v6.ok()) << c.advertise;
    EXPECT_EQ(*from_v6, c.want) << c.advertise;
  }
}

TEST(NodeAdvertise, RefusesMalformedAddresses) {
  for (const char* bad : {"[fd00::3", "10.0.0.3:x", ":7000", "*:7000", "::", "fd00::3]:7000"}) {
    auto a = AdvertisedAddress(bad, "0.0.0.0:9201");
    EXPECT_FALSE(a.ok()) << bad;
    if (!a.ok()) {
      EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(NodeAddresses, Ipv6LoopbackNeedsNoTokenButIpv6WildcardDoes) {
  NodeConfig c;
  c.name = "decode";
  c.http_host = "::1";
  c.transfer_address = "[::1]:0";
  EXPECT_TRUE(CheckTokenForAddresses(c).ok());
  c.transfer_address = "[::]:9201";
  EXPECT_EQ(CheckTokenForAddresses(c).code(), StatusCode::kFailedPrecondition);
  c.token = "a-real-secret";
  EXPECT_TRUE(CheckTokenForAddresses(c).ok());
  c.token = kBuiltInToken;
  c.transfer_address = "[::1]:0";
  c.http_host = "::";
  EXPECT_EQ(CheckTokenForAddresses(c).code(), StatusCode::kFailedPrecondition);
}

TEST(NodeAllowDecode, AnEmptyListAllowsAnyAddress) {
  auto a = DecodeAddressAllowed({}, "203.0.113.9:22");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(*a);
}

TEST(NodeAllowDecode, MatchesHostAndPortOrHostAlone) {
  const std::vector<std::string> allowed = {"10.0.0.3:9201", "10.0.0.4", "[fd00::5]:9201",
                                            "Decode-6.internal", "::1"};
  struct Case {
    const char* address;
    bool want;
  } cases[] = {
      {"10.0.0.3:9201", true},           {"10.0.0.3:22", false},      // that port only
      {"10.0.0.4:9201", true},           {"10.0.0.4:7", true},        // a host alone: any port
      {"[fd00::5]:9201", true},          {"[fd00:0:0::5]:9201", true},  // the same IPv6 address
      {"[fd00::6]:9201", false},         {"decode-6.internal:9201", true},
      {"10.0.0.30:9201", false},         {"127.0.0.1:9201", false},
      {"[::1]:9201", true},              {"[0:0::1]:1", true},
      {"not an address", false},
  };
  for (const Case& c : cases) {
    auto a = DecodeAddressAllowed(allowed, c.address);
    ASSERT_TRUE(a.ok()) << c.address;
    EXPECT_EQ(*a, c.want) << c.address;
  }
}

TEST(NodeAllowDecode, AMalformedEntryIsAnError) {
  for (const char* bad : {"[fd00::5", "*", "10.0.0.3:x", "::"}) {
    EXPECT_EQ(DecodeAddressAllowed({bad}, "10.0.0.3:9201").status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

// A node's runtime: weights on huge pages (where THP is on) and the first kv_prefault_tokens of
// the KV pool allocated up front; a negative prefault is refused.
TEST(NodeRuntime, HoldsWeightsOnHugePagesAndPrefaultsTheKvPool) {
  model::SyntheticModelSpec spec;
  spec.preset = *model::FindPreset("tiny");
  spec.seed = 3;
  spec.out = ::testing::TempDir() + "/node_runtime_tiny.gguf";
  ASSERT_TRUE(model::WriteSyntheticModel(spec).ok());
  NodeConfig c;
  c.model_path = spec.out;
  c.kv_capacity_tokens = 1 << 16;
  c.kv_prefault_tokens = 4096;
  auto r = BuildNodeRuntime(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const kv::KvGeometry& g = r->blocks->geometry();
  const std::int64_t per_token_blocks = std::int64_t{g.n_layers} * g.n_kv_heads;
  EXPECT_GE(r->blocks->allocated(), g.BlocksFor(4096) * per_token_blocks);
  EXPECT_LT(r->blocks->allocated(), g.BlocksFor(1 << 16) * per_token_blocks);  // not the whole pool
  EXPECT_EQ(r->blocks->used(), 0);
  EXPECT_EQ(r->model->file().placement(), core::HugePagesAvailable() ? core::FilePlacement::kHugePages
                                                                     : core::FilePlacement::kMapped);

  c.weights_huge_pages = false;
  c.kv_prefault_tokens = 0;
  auto mapped = BuildNodeRuntime(c);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  EXPECT_EQ(mapped->model->file().placement(), core::FilePlacement::kMapped);
  EXPECT_EQ(mapped->blocks->allocated(), 0);

  c.kv_prefault_tokens = -1;
  EXPECT_EQ(BuildNodeRuntime(c).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace smartgen::node
