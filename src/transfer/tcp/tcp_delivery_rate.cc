#include "transfer/tcp/tcp_delivery_rate.h"

#include <cstddef>

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace smartgen::transfer {

double TcpDeliveryBytesPerSecond(int fd) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return 0.0;
  // Older kernels fill less of the struct: the field must be inside what they wrote.
  if (len < offsetof(tcp_info, tcpi_delivery_rate) + sizeof(info.tcpi_delivery_rate)) return 0.0;
  if (info.tcpi_delivery_rate_app_limited) return 0.0;
  return static_cast<double>(info.tcpi_delivery_rate);
}

}  // namespace smartgen::transfer
