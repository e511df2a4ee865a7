// SpeculativeSender over a real endpoint pair (loopback transport shaped to 100 KB/s, memory
// block stores): it streams every block it was given except the skipped (pushed) ones and
// those the decode node fetched on demand (MarkRequested), each once; Remove stops a stream and
// reports what was never sent; Stop ends the thread with a stream still live and the other
// calls keep working. Completion is waited for on the stores' counters with deadlines.
#include "node/prefill/speculative_sender.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "select/layer_selection.h"
#include "transfer/loopback/loopback_transport.h"
#include "transfer_test_util.h"

namespace smartgen::node {
namespace {

namespace tt = transfer::testing;
constexpr std::uint64_t kSpecRequest = 11;
constexpr std::uint32_t kSpecBlocks = 8;
constexpr double kLinkBytesPerSecond = 1e5;

class SpeculativeSenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = std::make_shared<transfer::LoopbackTransport>(1 << 20);
    // A slow link (100 KB/s: the 64 blocks of 4 KiB take about 2.5 s), so the stream is still
    // going when the test acts on it.
    transfer::EndpointConfig prefill = tt::TestConfig("prefill");
    prefill.link.gbps = kLinkBytesPerSecond * 8 / 1e9;
    auto pair = tt::MakePair(t, t, std::move(prefill), tt::TestConfig("decode"), kSpecRequest,
                             kSpecBlocks);
    ASSERT_TRUE(pair.ok()) << pair.status().ToString();
    pair_ = std::move(*pair);
    const transfer::KvGeometry g = tt::TestGeometry();
    grid_ = {static_cast<int>(g.n_layers), static_cast<int>(g.n_kv_heads),
             static_cast<std::int32_t>(kSpecBlocks)};
    block_bytes_ = g.block_bytes();
  }

  // Every block of the grid, layer-major.
  std::vector<kv::BlockKey> Order() const {
    std::vector<kv::BlockKey> order;
    for (std::int64_t i = 0; i < grid_.total(); ++i) order.push_back(grid_.KeyOf(i));
    return order;
  }
  bool Present(const kv::BlockKey& k) const {
    return pair_.decode_store->IsPresent({kSpecRequest, k});
  }
  // Waits until the decode store holds `n` blocks (30 s at most).
  bool WaitForBlocks(std::uint64_t n) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (pair_.decode_store->PresentBlocks(kSpecRequest) < n) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }

  tt::EndpointPair pair_;
  kv::BlockGrid grid_;
  std::size_t block_bytes_ = 0;
};

TEST_F(SpeculativeSenderTest, StreamsEverythingButTheSkippedAndRequestedBlocksOnce) {
  SpeculativeSender sender(pair_.prefill.get(), block_bytes_, kLinkBytesPerSecond);
  kv::BlockSet skip(grid_);
  const std::set<std::int64_t> pushed = {0, 1, 9, 30};
  for (std::int64_t i : pushed) skip.Insert(grid_.KeyOf(i));
  // Fetched on demand while the stream runs, long before it gets there (blocks 40 and 60 are
  // at least 0.8 s of this link away): never streamed.
  const std::vector<kv::BlockKey> fetched = {grid_.KeyOf(40), grid_.KeyOf(60)};
  sender.Add(kSpecRequest, pair_.decode_peer, select::SpeculativeStream(Order()), std::move(skip),
             select::SpeculativePacing{}, core::Deadline::After(core::Seconds(30)));
  sender.MarkRequested(kSpecRequest, fetched);
  const std::uint64_t expected = grid_.total() - pushed.size() - fetched.size();
  ASSERT_TRUE(WaitForBlocks(expected)) << pair_.decode_store->PresentBlocks(kSpecRequest);
  // The stream ends by itself once everything was sent.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (sender.blocks_sent() < expected && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(sender.blocks_sent(), expected);
  EXPECT_EQ(pair_.decode_store->PresentBlocks(kSpecRequest), expected);
  for (std::int64_t i : pushed) EXPECT_FALSE(Present(grid_.KeyOf(i))) << "streamed a pushed block " << i;
  for (const auto& k : fetched) EXPECT_FALSE(Present(k)) << "streamed a fetched block " << k.block;
  EXPECT_EQ(pair_.decode_store->rejected_count(), 0u);
  EXPECT_EQ(sender.Remove(kSpecRequest), -1) << "a finished stream is gone";
}

TEST_F(SpeculativeSenderTest, RemoveStopsAStreamAndCountsWhatWasNeverSent) {
  SpeculativeSender sender(pair_.prefill.get(), block_bytes_, kLinkBytesPerSecond);
  sender.Add(kSpecRequest, pair_.decode_peer, select::SpeculativeStream(Order()),
             kv::BlockSet(grid_), select::SpeculativePacing{},
             core::Deadline::After(core::Seconds(30)));
  ASSERT_TRUE(WaitForBlocks(1));
  const std::int64_t never_sent = sender.Remove(kSpecRequest);
  EXPECT_GT(never_sent, 0);
  EXPECT_EQ(sender.blocks_cancelled(), static_cast<std::uint64_t>(never_sent));
  // What was handed out before (at most the batch in flight) may still land; nothing else.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LE(static_cast<std::int64_t>(pair_.decode_store->PresentBlocks(kSpecRequest)),
            grid_.total() - never_sent);
  EXPECT_EQ(sender.Remove(kSpecRequest), -1);
}

TEST_F(SpeculativeSenderTest, StopWithALiveStreamEndsAndLaterCallsStillWork) {
  SpeculativeSender sender(pair_.prefill.get(), block_bytes_, kLinkBytesPerSecond);
  sender.Add(kSpecRequest, pair_.decode_peer, select::SpeculativeStream(Order()),
             kv::BlockSet(grid_), select::SpeculativePacing{},
             core::Deadline::After(core::Seconds(30)));
  sender.Stop();
  const std::uint64_t sent = sender.blocks_sent();
  sender.MarkRequested(kSpecRequest, std::vector<kv::BlockKey>{grid_.KeyOf(3)});
  EXPECT_GE(sender.Remove(kSpecRequest), 0);  // a lease released during shutdown finds it
  EXPECT_EQ(sender.blocks_sent(), sent);
}

}  // namespace
}  // namespace smartgen::node
