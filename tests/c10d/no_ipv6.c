// no_ipv6: an LD_PRELOAD library under which socket(AF_INET6, ...) fails with EAFNOSUPPORT,
// as on a host booted with ipv6.disable=1: the workers' store's IPv4 fallback test
// (check_store.py dual_stack) runs c10d_store_helper with it. Every other socket is real.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>

typedef int (*socket_fn)(int, int, int);

int socket(int domain, int type, int protocol) {
  if (domain == AF_INET6) {
    errno = EAFNOSUPPORT;
    return -1;
  }
  static socket_fn real;
  if (!real) real = (socket_fn)dlsym(RTLD_NEXT, "socket");
  return real(domain, type, protocol);
}
