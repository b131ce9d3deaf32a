// ListenAddress: "ADDR:PORT" as metrics.listen takes it, parsed once (the
// config checks it, the daemon binds it).
//
// ADDR is a numeric IPv4 address ("127.0.0.1", "0.0.0.0" for every
// interface), a numeric IPv6 address in brackets ("[::1]", "[::]"), or
// "localhost" (127.0.0.1); PORT is 1..65535. No name is resolved (a mount
// must not wait for DNS). Pure; thread-safe.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <string_view>

#include "epochfs/common/status.h"

namespace epochfs {

struct ListenAddress {
  sockaddr_storage addr{};  // sockaddr_in or sockaddr_in6, port set
  socklen_t len = 0;
  std::string text;  // as given
};

// InvalidArgument (naming what is wrong) unless `s` is ADDR:PORT as above.
Result<ListenAddress> ParseListenAddress(std::string_view s);

}  // namespace epochfs
