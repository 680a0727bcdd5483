#include "serve/connection.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>

namespace jf {

namespace {

// The numeric host and the port of an address, as cpp-httplib derives remote_addr / remote_port.
bool host_and_port(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
  char h[NI_MAXHOST];
  char p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, p, sizeof p,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  port = std::atoi(p);
  return true;
}

bool endpoints_match(int fd, const std::string& remote_addr, int remote_port, int local_port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;  // not a socket
  if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return false;
  std::string host;
  int port = 0;
  if (!host_and_port(addr, len, host, port) || port != local_port) return false;
  len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;  // a listening socket
  return host_and_port(addr, len, host, port) && port == remote_port && host == remote_addr;
}

}  // namespace

int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port) {
  if (remote_port <= 0 || local_port <= 0) return -1;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  const int listing = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == listing) continue;  // "." and ".."
    if (endpoints_match(static_cast<int>(fd), remote_addr, remote_port, local_port)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

bool peer_has_closed(int socket) {
  pollfd p{socket, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  // Readable: either the client's next pipelined request (still listening) or the end of the stream.
  char byte;
  const ssize_t n = recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace jf
