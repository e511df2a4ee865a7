// The kernel's measure of what a TCP connection delivers: tcpi_delivery_rate from TCP_INFO,
// computed from ACKs, so it is the rate past the bottleneck (a shaped link, a tc qdisc), not
// how fast the socket buffer took the bytes. In its own file: it needs <linux/tcp.h>, whose
// struct tcp_info clashes with glibc's <netinet/tcp.h> (which lacks the field).
#pragma once

namespace smartgen::transfer {

// Bytes per second; 0 when the kernel has no sample yet, the last sample was limited by the
// application (nothing more to send), or the socket is not TCP.
double TcpDeliveryBytesPerSecond(int fd);

}  // namespace smartgen::transfer
