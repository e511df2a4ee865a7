// StagedCopies (node/decode/staged_copies.h): which copies of a prompt block are written in
// place and which wait for the engine thread, and that applying them keeps the rows the decode
// node wrote itself.
#include "node/decode/staged_copies.h"

#include <gtest/gtest.h>

#include <cstring>

#include "kv/block_pool.h"

namespace smartgen::node {
namespace {

using transfer::SinkAction;
using transfer::WireFormat;

kv::KvGeometry Geometry() {
  kv::KvGeometry g;
  g.n_layers = 2;
  g.n_kv_heads = 1;
  g.head_dim = 4;
  g.block_tokens = 4;
  g.dtype = kv::KvDType::kF32;
  return g;
}

struct Fixture {
  explicit Fixture(std::int64_t n_prompt, bool stage_last = true)
      : pool(Geometry(), 64),
        residency(2, 1, Geometry().BlocksFor(n_prompt)),
        staged(&kv, &residency, n_prompt, stage_last) {
    EXPECT_TRUE(kv.Reserve(n_prompt + 4).ok());
  }
  // Prepares a copy and fills its destination with `value`; returns the action.
  SinkAction Arrive(const kv::BlockKey& key, WireFormat wire, float value,
                    transfer::BlockDestination* dst) {
    const SinkAction a = staged.Prepare(key, wire, nullptr, dst);
    if (a == SinkAction::kWrite) {
      for (std::size_t i = 0; i < dst->k.size() / 4; ++i) {
        std::memcpy(dst->k.data() + 4 * i, &value, 4);
        std::memcpy(dst->v.data() + 4 * i, &value, 4);
      }
    }
    return a;
  }
  float K(const kv::BlockKey& key, int row) {
    float v;
    std::memcpy(&v, kv.BlockData(key.layer, key.kv_head, key.block) + row * 16, 4);
    return v;
  }
  kv::BlockPool pool;
  kv::SequenceKv kv{&pool};
  kv::Residency residency;
  StagedCopies staged;
};

TEST(StagedCopies, ExactCopyOfAnInt8BlockWaitsForApply) {
  Fixture f(16);  // four full blocks per layer: nothing staged for being last
  const kv::BlockKey key{1, 0, 2};
  transfer::BlockDestination d1, d2;
  ASSERT_EQ(f.Arrive(key, WireFormat::kInt8, 1.0f, &d1), SinkAction::kWrite);
  EXPECT_TRUE(f.staged.OnReady(key, WireFormat::kInt8, d1, nullptr));  // in place
  d1 = {};
  EXPECT_EQ(f.residency.state(1, 0, 2), kv::BlockState::kApproximate);
  EXPECT_TRUE(f.residency.present(1, 0, 2));
  EXPECT_FALSE(f.residency.exact(1, 0, 2));

  // A second int8 copy is dropped; the exact one is staged, and the KV keeps the int8 values
  // (attention may be reading them) until Apply.
  transfer::BlockDestination dup;
  EXPECT_EQ(f.Arrive(key, WireFormat::kInt8, 9.0f, &dup), SinkAction::kDiscard);
  ASSERT_EQ(f.Arrive(key, WireFormat::kNative, 2.0f, &d2), SinkAction::kWrite);
  EXPECT_NE(d2.k.data(), f.kv.BlockData(1, 0, 2));
  EXPECT_FALSE(f.staged.OnReady(key, WireFormat::kNative, d2, nullptr));
  d2 = {};
  EXPECT_EQ(f.K(key, 0), 1.0f);
  EXPECT_EQ(f.residency.approximate_total(), 1);
  EXPECT_EQ(f.staged.Apply(), 1);
  EXPECT_EQ(f.K(key, 3), 2.0f);
  EXPECT_TRUE(f.residency.exact(1, 0, 2));
  EXPECT_EQ(f.residency.approximate_total(), 0);
  EXPECT_EQ(f.residency.present_total(), 1);  // counted once
  EXPECT_EQ(f.staged.Apply(), 0);
}

TEST(StagedCopies, LastPartialBlockKeepsTheDecodedRows) {
  Fixture f(10);  // blocks of 4: block 2 holds prompt rows 8, 9 and the decode node's 10, 11
  const kv::BlockKey last{0, 0, 2};
  const float mine = 7.0f;
  std::memcpy(f.kv.BlockData(0, 0, 2) + 2 * 16, &mine, 4);  // row 10, written by decoding
  transfer::BlockDestination d;
  ASSERT_EQ(f.Arrive(last, WireFormat::kNative, 3.0f, &d), SinkAction::kWrite);
  EXPECT_NE(d.k.data(), f.kv.BlockData(0, 0, 2));  // staged, never in place
  EXPECT_FALSE(f.staged.OnReady(last, WireFormat::kNative, d, nullptr));
  d = {};
  EXPECT_FALSE(f.residency.present(0, 0, 2));
  EXPECT_EQ(f.staged.Apply(), 1);
  EXPECT_EQ(f.K(last, 0), 3.0f);
  EXPECT_EQ(f.K(last, 1), 3.0f);
  EXPECT_EQ(f.K(last, 2), mine);  // the prompt has 2 rows in this block: row 10 is untouched
  EXPECT_TRUE(f.residency.exact(0, 0, 2));
  // Other blocks are written in place.
  transfer::BlockDestination d0;
  ASSERT_EQ(f.Arrive({0, 0, 0}, WireFormat::kNative, 4.0f, &d0), SinkAction::kWrite);
  EXPECT_EQ(d0.k.data(), f.kv.BlockData(0, 0, 0));
}

TEST(StagedCopies, InPlaceWritesOfTheTwoKindsNeverOverlap) {
  Fixture f(16);
  const kv::BlockKey key{0, 0, 1};
  transfer::BlockDestination exact, int8, exact2;
  ASSERT_EQ(f.Arrive(key, WireFormat::kNative, 5.0f, &exact), SinkAction::kWrite);
  // An exact write in flight: the int8 copy is dropped (the exact one is coming).
  EXPECT_EQ(f.Arrive(key, WireFormat::kInt8, 1.0f, &int8), SinkAction::kDiscard);
  EXPECT_TRUE(f.staged.OnReady(key, WireFormat::kNative, exact, nullptr));
  exact = {};  // the engine lets go of the destination
  EXPECT_TRUE(f.residency.exact(0, 0, 1));

  const kv::BlockKey other{1, 0, 1};
  ASSERT_EQ(f.Arrive(other, WireFormat::kInt8, 1.0f, &int8), SinkAction::kWrite);
  // An int8 write in flight: the exact copy is staged, applied only once the int8 one landed.
  ASSERT_EQ(f.Arrive(other, WireFormat::kNative, 6.0f, &exact2), SinkAction::kWrite);
  EXPECT_NE(exact2.k.data(), f.kv.BlockData(1, 0, 1));
  EXPECT_FALSE(f.staged.OnReady(other, WireFormat::kNative, exact2, nullptr));
  exact2 = {};
  EXPECT_EQ(f.staged.Apply(), 0);  // the int8 write is still in flight
  EXPECT_TRUE(f.staged.OnReady(other, WireFormat::kInt8, int8, nullptr));
  int8 = {};
  EXPECT_EQ(f.staged.Apply(), 1);
  EXPECT_EQ(f.K(other, 0), 6.0f);
  EXPECT_TRUE(f.residency.exact(1, 0, 1));
}

TEST(StagedCopies, RejectedOrAbandonedCopiesAreForgotten) {
  Fixture f(16);
  const kv::BlockKey key{0, 0, 3};
  transfer::BlockDestination d, again;
  ASSERT_EQ(f.Arrive(key, WireFormat::kInt8, 1.0f, &d), SinkAction::kWrite);
  f.staged.OnRejected(key, d);
  d = {};
  EXPECT_FALSE(f.residency.present(0, 0, 3));
  ASSERT_EQ(f.Arrive(key, WireFormat::kInt8, 1.0f, &d), SinkAction::kWrite);
  EXPECT_TRUE(f.staged.OnReady(key, WireFormat::kInt8, d, nullptr));
  d = {};
  // A staged exact copy whose frame is abandoned (destination released unreported) does not
  // block the next exact copy.
  ASSERT_EQ(f.Arrive(key, WireFormat::kNative, 2.0f, &d), SinkAction::kWrite);
  d = {};
  ASSERT_EQ(f.Arrive(key, WireFormat::kNative, 3.0f, &again), SinkAction::kWrite);
  EXPECT_FALSE(f.staged.OnReady(key, WireFormat::kNative, again, nullptr));
  again = {};
  EXPECT_EQ(f.staged.Apply(), 1);
  EXPECT_EQ(f.K(key, 0), 3.0f);
}

}  // namespace
}  // namespace smartgen::node
