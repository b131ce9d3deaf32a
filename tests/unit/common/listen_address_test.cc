#include "epochfs/common/listen_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

namespace epochfs::listen_address_test {

TEST(ListenAddress, NumericAddressesAndPorts) {
  auto v4 = ParseListenAddress("127.0.0.1:9464");
  ASSERT_TRUE(v4.ok()) << v4.status().message();
  const auto* a4 = reinterpret_cast<const sockaddr_in*>(&v4.value().addr);
  EXPECT_EQ(a4->sin_family, AF_INET);
  EXPECT_EQ(ntohs(a4->sin_port), 9464);
  EXPECT_EQ(ntohl(a4->sin_addr.s_addr), 0x7f000001u);
  EXPECT_EQ(v4.value().len, sizeof(sockaddr_in));

  auto lh = ParseListenAddress("localhost:1");
  ASSERT_TRUE(lh.ok());
  EXPECT_EQ(ntohl(reinterpret_cast<const sockaddr_in*>(&lh.value().addr)->sin_addr.s_addr),
            0x7f000001u);

  auto v6 = ParseListenAddress("[::1]:65535");
  ASSERT_TRUE(v6.ok()) << v6.status().message();
  const auto* a6 = reinterpret_cast<const sockaddr_in6*>(&v6.value().addr);
  EXPECT_EQ(a6->sin6_family, AF_INET6);
  EXPECT_EQ(ntohs(a6->sin6_port), 65535);
  EXPECT_TRUE(IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr));
}

TEST(ListenAddress, RefusesWhatIsNotAddrPort) {
  for (const char* bad : {"", "9464", ":9464", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                          "127.0.0.1:94x", "example.org:80", "::1:9464", "[::1]", "[x]:80",
                          "1.2.3:80"}) {
    auto r = ParseListenAddress(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    }
  }
}

}  // namespace epochfs::listen_address_test
