// sd_notify without libsystemd (see sd_notify.h).
#include "runtime/serve/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

namespace bpfql {

bool sd_notify_state(std::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return false;
  size_t len = std::strlen(path);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if ((path[0] != '/' && path[0] != '@') || len >= sizeof a.sun_path) return false;
  std::memcpy(a.sun_path, path, len);
  if (path[0] == '@') a.sun_path[0] = '\0';  // the abstract namespace
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  socklen_t size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  bool ok = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&a), size) ==
            static_cast<ssize_t>(state.size());
  close(fd);
  return ok;
}

}  // namespace bpfql
