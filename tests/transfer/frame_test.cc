#include "transfer/frame.h"

#include <gtest/gtest.h>

#include <numeric>

namespace smartgen::transfer {
namespace {

FrameHeader SampleHeader() {
  FrameHeader h;
  h.type = FrameType::kData;
  h.priority = Priority::kProactive;
  h.flags = kFlagPush;
  h.request_id = 0x0102030405060708ull;
  h.op_id = 99;
  h.layer = 17;
  h.kv_head = 3;
  h.first_block = 1000;
  h.n_blocks = 12;
  h.generation = 4;
  h.aux = 77;
  h.payload_bytes = 12 * 4096;
  h.payload_checksum = 0xDEADBEEFCAFEF00Dull;
  return h;
}

TEST(Frame, HeaderRoundTripsEveryField) {
  const FrameHeader h = SampleHeader();
  const EncodedHeader bytes = EncodeHeader(h);
  auto back = DecodeHeader(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->type, h.type);
  EXPECT_EQ(back->priority, h.priority);
  EXPECT_EQ(back->flags, h.flags);
  EXPECT_EQ(back->range(), h.range());
  EXPECT_EQ(back->op_id, h.op_id);
  EXPECT_EQ(back->generation, h.generation);
  EXPECT_EQ(back->aux, h.aux);
  EXPECT_EQ(back->payload_bytes, h.payload_bytes);
  EXPECT_EQ(back->payload_checksum, h.payload_checksum);
}

TEST(Frame, AnyCorruptHeaderByteIsDataLoss) {
  const EncodedHeader good = EncodeHeader(SampleHeader());
  for (std::size_t i = 0; i < kFrameHeaderBytes; ++i) {
    for (std::uint8_t bit : {0x01, 0x80}) {
      EncodedHeader bad = good;
      bad[i] ^= std::byte{bit};
      auto decoded = DecodeHeader(bad);
      ASSERT_FALSE(decoded.ok()) << "byte " << i;
      EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss);
    }
  }
}

TEST(Frame, OversizedPayloadIsRejected) {
  FrameHeader h = SampleHeader();
  h.payload_bytes = kMaxFramePayload + 1;
  EXPECT_EQ(DecodeHeader(EncodeHeader(h)).status().code(), StatusCode::kDataLoss);
}

TEST(Frame, ChecksumOfPartsEqualsChecksumOfWhole) {
  std::vector<std::byte> data(10000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 7);
  const ConstBytes all(data);
  const std::vector<ConstBytes> parts = {all.first(1), all.subspan(1, 4095), all.subspan(4096)};
  EXPECT_EQ(Checksum(parts), Checksum(all));
  const std::uint64_t before = Checksum(parts);
  data[5000] ^= std::byte{1};
  EXPECT_NE(Checksum(parts), before);
}

TEST(Frame, EveryChecksumIsaAgrees) {
  std::vector<std::byte> data(1 << 20);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
  const ConstBytes all(data);
  const std::vector<ConstBytes> parts = {all.first(2048), all.subspan(2048, 3), all.subspan(2051)};
  const std::uint64_t reference = ChecksumWith(ChecksumIsa::kBaseline, parts);
  EXPECT_EQ(reference, ChecksumWith(ChecksumIsa::kBaseline, std::span<const ConstBytes>(&all, 1)));
  EXPECT_EQ(Checksum(parts), reference);
  const ChecksumIsa selected = SelectedChecksumIsa();
  if (selected == ChecksumIsa::kAvx2 || selected == ChecksumIsa::kAvx512) {
    EXPECT_EQ(ChecksumWith(ChecksumIsa::kAvx2, parts), reference);
  }
  if (selected == ChecksumIsa::kAvx512) {
    EXPECT_EQ(ChecksumWith(ChecksumIsa::kAvx512, parts), reference);
  }
}

TEST(Frame, AckAndPullPayloadsRoundTrip) {
  const std::vector<AckEntry> acks = {{5, {1, 2, 3, 4, 5}, StatusCode::kOk},
                                      {6, {7, 0, 1, 9, 1}, StatusCode::kDataLoss}};
  auto a = DecodeAcks(EncodeAcks(acks));
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[1].op_id, 6u);
  EXPECT_EQ((*a)[1].range, (BlockRange{7, 0, 1, 9, 1}));
  EXPECT_EQ((*a)[1].code, StatusCode::kDataLoss);

  const std::vector<PullEntry> pulls = {{{1, 2, 3, 4, 5}, 0}, {{9, 8, 7, 6, 5}, 3}};
  auto p = DecodePulls(EncodePulls(pulls));
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[1].range, (BlockRange{9, 8, 7, 6, 5}));
  EXPECT_EQ((*p)[1].generation, 3u);

  auto truncated = EncodePulls(pulls);
  truncated.pop_back();
  EXPECT_EQ(DecodePulls(truncated).status().code(), StatusCode::kDataLoss);
}

TEST(Frame, MakeFrameSealsPayload) {
  FrameHeader h;
  h.type = FrameType::kControl;
  const OwnedFrame f = MakeFrame(h, {std::byte{1}, std::byte{2}, std::byte{3}});
  EXPECT_EQ(f.header.payload_bytes, 3u);
  EXPECT_EQ(f.header.payload_checksum, Checksum(ConstBytes(f.payload)));
}

}  // namespace
}  // namespace smartgen::transfer
