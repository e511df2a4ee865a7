// Address parsing and formatting of the socket layer (socket.h): IPv4, bracketed IPv6, names
// and the wildcards. Pure functions, no sockets.
#include <gtest/gtest.h>

#include "transfer/socket.h"

namespace smartgen::transfer {
namespace {

TEST(SocketAddress, ParsesIpv4NamesAndWildcards) {
  auto a = ParseHostPort("10.0.0.3:9201");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "10.0.0.3");
  EXPECT_EQ(a->port, 9201);
  auto b = ParseHostPort("decode-1.internal:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "decode-1.internal");
  EXPECT_EQ(b->port, 0);
  auto c = ParseHostPort(":7000");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "");
  auto d = ParseHostPort("*:7000");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->host, "*");
}

TEST(SocketAddress, ParsesBracketedIpv6) {
  auto a = ParseHostPort("[::1]:7000");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 7000);
  auto any = ParseHostPort("[::]:0");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->host, "::");
  auto scoped = ParseHostPort("[fe80::1%eth0]:80");
  ASSERT_TRUE(scoped.ok());
  EXPECT_EQ(scoped->host, "fe80::1%eth0");
}

TEST(SocketAddress, RefusesMalformedAddresses) {
  for (const char* bad : {"10.0.0.3", "10.0.0.3:", "10.0.0.3:x", "10.0.0.3:70000", "[::1:7000",
                          "[]:7000", "::1:7000", "fd00::3:9201"}) {
    auto r = ParseHostPort(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(SocketAddress, FormatBracketsIpv6AndRoundTrips) {
  EXPECT_EQ(FormatHostPort("10.0.0.3", 9201), "10.0.0.3:9201");
  EXPECT_EQ(FormatHostPort("::1", 7000), "[::1]:7000");
  EXPECT_EQ(FormatHostPort("node", 1), "node:1");
  for (const char* text : {"[fd00::3]:9201", "127.0.0.1:5", "[::]:0"}) {
    auto hp = ParseHostPort(text);
    ASSERT_TRUE(hp.ok()) << text;
    EXPECT_EQ(FormatHostPort(hp->host, hp->port), text);
  }
}

}  // namespace
}  // namespace smartgen::transfer
