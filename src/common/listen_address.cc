#include "epochfs/common/listen_address.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace epochfs {

Result<ListenAddress> ParseListenAddress(std::string_view s) {
  const std::string what = "\"" + std::string(s) + "\": ";
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos) return InvalidArgument(what + "no :PORT");
  std::string host(s.substr(0, colon));
  const std::string_view port_text = s.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    return InvalidArgument(what + "the port is not 1..65535");
  }
  ListenAddress out;
  out.text = std::string(s);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&out.addr);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a6->sin6_addr) != 1) {
      return InvalidArgument(what + "not a numeric IPv6 address in brackets");
    }
    out.len = sizeof(sockaddr_in6);
    return out;
  }
  if (host == "localhost") host = "127.0.0.1";
  auto* a4 = reinterpret_cast<sockaddr_in*>(&out.addr);
  a4->sin_family = AF_INET;
  a4->sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &a4->sin_addr) != 1) {
    return InvalidArgument(what + "not a numeric IPv4 address, [IPv6] or localhost");
  }
  out.len = sizeof(sockaddr_in);
  return out;
}

}  // namespace epochfs
