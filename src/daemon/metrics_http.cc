#include "metrics_http.h"

#include <microhttpd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "epochfs/common/log.h"

namespace epochfs {
namespace {

MHD_Result Queue(MHD_Connection* c, unsigned code, const std::string& body,
                 const char* type) {
  MHD_Response* r = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()),
                                                    MHD_RESPMEM_MUST_COPY);
  if (r == nullptr) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  const MHD_Result ret = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ret;
}

MHD_Result Answer(void* cls, MHD_Connection* c, const char* url, const char* method,
                  const char* /*version*/, const char* /*upload_data*/,
                  size_t* upload_data_size, void** /*con_cls*/) {
  const char* plain = "text/plain; charset=utf-8";
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
      std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    *upload_data_size = 0;  // whatever was sent is not read
    return Queue(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics\n", plain);
  }
  if (std::strcmp(url, "/metrics") != 0) {
    return Queue(c, MHD_HTTP_NOT_FOUND, "epochfs serves /metrics\n", plain);
  }
  const auto& text = *static_cast<const std::function<std::string()>*>(cls);
  return Queue(c, MHD_HTTP_OK, text(), "text/plain; version=0.0.4; charset=utf-8");
}

// libmicrohttpd's own messages (a refused connection, ...) into the log.
void Logger(void* /*cls*/, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string line(buf);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  log::Debug("metrics.listen: " + line);
}

}  // namespace

Result<UniqueFd> MetricsHttp::Listen(const ListenAddress& address) {
  const std::string what = "metrics.listen " + address.text + ": ";
  UniqueFd fd(::socket(address.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus(Code::kIoError, errno, what + "socket");
  const int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (address.addr.ss_family == AF_INET6) {
    (void)::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address.addr), address.len) != 0) {
    return Status(Code::kIoError, what + std::strerror(errno) +
                                      (errno == EADDRINUSE ? " (another process listens there)"
                                                           : ""));
  }
  if (::listen(fd.get(), 16) != 0) return ErrnoStatus(Code::kIoError, errno, what + "listen");
  return fd;
}

Result<std::unique_ptr<MetricsHttp>> MetricsHttp::Start(UniqueFd listener,
                                                        std::function<std::string()> text) {
  std::unique_ptr<MetricsHttp> m(new MetricsHttp(std::move(text)));
  const int fd = listener.get();
  m->daemon_ = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG, 0, nullptr, nullptr,
      &Answer, &m->text_, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, 16u,
      MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_EXTERNAL_LOGGER, &Logger, nullptr,
      MHD_OPTION_END);
  if (m->daemon_ == nullptr) return IoError("metrics.listen: the HTTP server did not start");
  (void)listener.release();  // the server owns and closes it
  return m;
}

MetricsHttp::~MetricsHttp() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace epochfs
