// bpfql-workload: a process that makes an exactly known set of system calls, so integration
// tests can assert exact numbers. Usage: bpfql-workload STEP [STEP...], where a STEP is one of
//   getppid N            N getppid() calls
//   getpid N             N getpid() calls
//   getppid-paced N MS   N getppid() calls spread evenly over MS milliseconds
//   read N SIZE          N read()s of exactly SIZE bytes from /dev/zero (sys_exit_read ret == SIZE)
//   read-sizes N         one read() of each size 1..N bytes from /dev/zero
//   write N SIZE         N write()s of SIZE bytes to /dev/null
//   openat N PATH        N openat(PATH, O_RDONLY|O_CREAT) + close (the file is left behind)
//   open-missing N PATH  N openat(PATH, O_RDONLY) that fail (PATH must not exist)
//   sleep MS...          one clock_nanosleep per value (in milliseconds)
//   fork N               N fork()s; each child _exit(0)s at once and is reaped
//   child-getppid N      one fork(); the child makes N getppid() calls and _exit(0)s; reaped
//   mixed N SIZE         getppid N, then read N SIZE
//   spin MS              burn MS milliseconds of this thread's CPU time (no system calls but
//                        clock_gettime, which the vDSO answers), for CPU profiling tests
//   connect N PORT       N TCP connections to 127.0.0.1:PORT, each closed once established
//                        (the test listens there), for the sock/tcp tracepoints
//   connect6 N PORT      the same to [::1]:PORT
//   connect-refused N PORT  N TCP connects to 127.0.0.1:PORT where nothing listens (each is
//                        refused: the SYN is dropped with reason NO_SOCKET)
//   threads N            N pthread_create()s of bpfql_wl_thread, each joined before the next
//   nanosleep MS...      one nanosleep() (the old system call, not clock_nanosleep) per value
//   chown N PATH         N fchownat(PATH, 65534, -1): as root, each is a CAP_CHOWN check
//   statx N PATH         N statx(PATH) calls, whether PATH exists or not
//   accept N             listen on 127.0.0.1 (a port the kernel picks), make N connections to
//                        it, then take them: accept() for the even ones, accept4() for the odd
//                        ones; reports "done accept-port PORT" and "done accept-client PORT" for
//                        each client's port, in accept order
//   file-write N SIZE PATH  open PATH (O_WRONLY|O_CREAT|O_APPEND), N write()s of SIZE bytes, close
//   file-read N SIZE PATH   open PATH (O_RDONLY), N read()s of exactly SIZE bytes, close (PATH
//                        must hold N * SIZE bytes: write them first)
//
// Before doing anything it names itself "bpfql-wl" and waits until stdin is readable (a line or
// EOF), so a test can attach bpfql to its pid first. It waits with poll() and never reads stdin:
// a read() would show up in the read tests. When done it prints one line per step, "done STEP N",
// in a single write() to stdout after all steps.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPORT_SIZE 8192

static char report[REPORT_SIZE];
static size_t report_len;

static void die(const char* what) {
  fprintf(stderr, "bpfql-workload: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void usage(const char* why) {
  fprintf(stderr, "bpfql-workload: %s\nsee the comment at the top of workload.c for the steps\n", why);
  exit(2);
}

static long number(const char* text) {
  char* end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < 0) usage("expected a non-negative number");
  return value;
}

static void note(const char* step, long n) {
  int written = snprintf(report + report_len, REPORT_SIZE - report_len, "done %s %ld\n", step, n);
  if (written > 0 && (size_t)written < REPORT_SIZE - report_len) report_len += (size_t)written;
}

static void sleep_ns(long long ns) {
  struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
  }
}

static void do_getppid(long n) {
  for (long i = 0; i < n; ++i) syscall(SYS_getppid);
}

static void do_getpid(long n) {
  for (long i = 0; i < n; ++i) syscall(SYS_getpid);
}

static void do_getppid_paced(long n, long ms) {
  long long gap = n > 0 ? ms * 1000000LL / n : 0;
  for (long i = 0; i < n; ++i) {
    syscall(SYS_getppid);
    sleep_ns(gap);
  }
}

static char* buffer_of(long size) {
  char* buf = malloc(size > 0 ? (size_t)size : 1);
  if (!buf) die("malloc");
  return buf;
}

// The file descriptors are opened before the wait, so the traced part holds only the I/O itself.
static void do_read(int fd, long n, long size, char* buf) {
  for (long i = 0; i < n; ++i) {
    ssize_t got = read(fd, buf, (size_t)size);
    if (got != size) die("short read from /dev/zero");
  }
}

static void do_read_sizes(int fd, long n, char* buf) {
  for (long size = 1; size <= n; ++size) {
    if (read(fd, buf, (size_t)size) != size) die("short read from /dev/zero");
  }
}

static void do_write(int fd, long n, long size, const char* buf) {
  for (long i = 0; i < n; ++i) {
    if (write(fd, buf, (size_t)size) != size) die("short write to /dev/null");
  }
}

static void do_openat(long n, const char* path, int flags, int must_fail) {
  for (long i = 0; i < n; ++i) {
    long fd = syscall(SYS_openat, AT_FDCWD, path, flags, 0600);
    if (must_fail && fd >= 0) usage("open-missing: the path exists");
    if (!must_fail && fd < 0) die(path);
    if (fd >= 0) close((int)fd);
  }
}

// A regular file with a known name, read or written in known sizes (the fd table tests).
static void do_file_io(long n, long size, const char* path, char* buf, int writing) {
  int fd = open(path, writing ? O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC : O_RDONLY | O_CLOEXEC,
                0600);
  if (fd < 0) die(path);
  for (long i = 0; i < n; ++i) {
    ssize_t done = writing ? write(fd, buf, (size_t)size) : read(fd, buf, (size_t)size);
    if (done != size) die(writing ? "short write to a file" : "short read from a file");
  }
  close(fd);
}

static long long thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) die("clock_gettime");
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// CPU time, not wall time: on a busy machine the process is still sampled for MS of running.
static void do_spin(long ms) {
  long long until = thread_cpu_ns() + ms * 1000000LL;
  volatile unsigned long sink = 0;
  while (thread_cpu_ns() < until) {
    for (int i = 0; i < 10000; ++i) sink += (unsigned long)i;
  }
}

static void do_child_getppid(long n) {
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    for (long i = 0; i < n; ++i) syscall(SYS_getppid);
    _exit(0);
  }
  if (waitpid(child, NULL, 0) < 0) die("waitpid");
}

static void do_fork(long n) {
  for (long i = 0; i < n; ++i) {
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) _exit(0);
    if (waitpid(child, NULL, 0) < 0) die("waitpid");
  }
}

// connect() blocks until the handshake is done, so every connection passes SYN_SENT and
// ESTABLISHED before it is closed.
static void do_connect(long n, long port, int ipv6) {
  struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  v6.sin6_addr = in6addr_loopback;
  for (long i = 0; i < n; ++i) {
    int fd = socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int rc = ipv6 ? connect(fd, (struct sockaddr*)&v6, sizeof v6)
                  : connect(fd, (struct sockaddr*)&v4, sizeof v4);
    if (rc != 0) die("connect");
    close(fd);
  }
}

static void do_connect_refused(long n, long port) {
  struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (long i = 0; i < n; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr*)&v4, sizeof v4) == 0 || errno != ECONNREFUSED)
      usage("connect-refused: something listens on PORT");
    close(fd);
  }
}

static void do_accept(long n) {
  struct sockaddr_in addr = {.sin_family = AF_INET};
  socklen_t len = sizeof addr;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0 || bind(listener, (struct sockaddr*)&addr, len) != 0 || listen(listener, 64) != 0 ||
      getsockname(listener, (struct sockaddr*)&addr, &len) != 0)
    die("listen on 127.0.0.1");
  note("accept-port", ntohs(addr.sin_port));
  int clients[64];
  if (n > 64) usage("accept: at most 64");
  for (long i = 0; i < n; ++i) {
    clients[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (clients[i] < 0 || connect(clients[i], (struct sockaddr*)&addr, sizeof addr) != 0)
      die("connect to the listener");
  }
  for (long i = 0; i < n; ++i) {
    struct sockaddr_in peer;
    socklen_t peer_len = sizeof peer;
    int fd = i % 2 == 0 ? accept(listener, (struct sockaddr*)&peer, &peer_len)
                        : accept4(listener, (struct sockaddr*)&peer, &peer_len, SOCK_CLOEXEC);
    if (fd < 0) die("accept");
    note("accept-client", ntohs(peer.sin_port));
    close(fd);
  }
  for (long i = 0; i < n; ++i) close(clients[i]);
  close(listener);
}

// Not static: threadsnoop resolves the start routine's name from the symbol table.
void* bpfql_wl_thread(void* arg) { return arg; }

static void do_threads(long n) {
  for (long i = 0; i < n; ++i) {
    pthread_t thread;
    int rc = pthread_create(&thread, NULL, bpfql_wl_thread, NULL);
    if (rc != 0) {
      errno = rc;
      die("pthread_create");
    }
    pthread_join(thread, NULL);
  }
}

static void do_chown(long n, const char* path) {
  for (long i = 0; i < n; ++i)
    if (fchownat(AT_FDCWD, path, 65534, (gid_t)-1, 0) != 0) die(path);
}

static void do_statx(long n, const char* path) {
  struct statx buf;
  for (long i = 0; i < n; ++i) statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &buf);
}

static void wait_for_release(void) {
  struct pollfd p = {.fd = 0, .events = POLLIN};
  while (poll(&p, 1, -1) < 0) {
    if (errno != EINTR) die("poll stdin");
  }
}

// Every step needs its arguments known before the wait, so parse first, run later.
struct step {
  const char* name;
  long a, b;
  const char* path;
  char** sleeps;
  int nsleeps;
  char* buf;
};

static int parse_steps(int argc, char** argv, struct step* steps, int max_steps) {
  int count = 0;
  for (int i = 1; i < argc;) {
    if (count == max_steps) usage("too many steps");
    struct step* s = &steps[count++];
    memset(s, 0, sizeof *s);
    s->name = argv[i++];
    const char* name = s->name;
    int args_needed = 0;
    if (!strcmp(name, "getppid") || !strcmp(name, "getpid") || !strcmp(name, "read-sizes") ||
        !strcmp(name, "fork") || !strcmp(name, "spin") || !strcmp(name, "child-getppid") ||
        !strcmp(name, "threads") || !strcmp(name, "accept")) {
      args_needed = 1;
    } else if (!strcmp(name, "getppid-paced") || !strcmp(name, "read") || !strcmp(name, "write") ||
               !strcmp(name, "openat") || !strcmp(name, "open-missing") || !strcmp(name, "mixed") ||
               !strcmp(name, "connect") || !strcmp(name, "connect6") ||
               !strcmp(name, "connect-refused") || !strcmp(name, "chown") || !strcmp(name, "statx")) {
      args_needed = 2;
    } else if (!strcmp(name, "file-write") || !strcmp(name, "file-read")) {
      if (i + 3 > argc) usage("missing step arguments");
      s->a = number(argv[i]);
      s->b = number(argv[i + 1]);
      s->path = argv[i + 2];
      i += 3;
      continue;
    } else if (!strcmp(name, "sleep") || !strcmp(name, "nanosleep")) {
      s->sleeps = &argv[i];
      while (i < argc && argv[i][0] >= '0' && argv[i][0] <= '9') {
        number(argv[i]);
        ++i;
        ++s->nsleeps;
      }
      if (s->nsleeps == 0) usage("sleep needs at least one MS value");
      continue;
    } else {
      usage("unknown step");
    }
    if (i + args_needed > argc) usage("missing step arguments");
    s->a = number(argv[i]);
    if (args_needed == 2) {
      int path_arg = !strcmp(name, "openat") || !strcmp(name, "open-missing") || !strcmp(name, "chown") ||
                     !strcmp(name, "statx");
      if (path_arg) s->path = argv[i + 1];
      else s->b = number(argv[i + 1]);
    }
    if ((!strcmp(name, "connect") || !strcmp(name, "connect6") || !strcmp(name, "connect-refused")) &&
        (s->b < 1 || s->b > 65535))
      usage("connect: PORT must be 1..65535");
    i += args_needed;
  }
  if (count == 0) usage("no steps given");
  return count;
}

static void run_step(struct step* s, int zero_fd, int null_fd) {
  const char* name = s->name;
  if (!strcmp(name, "getppid")) do_getppid(s->a);
  else if (!strcmp(name, "getpid")) do_getpid(s->a);
  else if (!strcmp(name, "getppid-paced")) do_getppid_paced(s->a, s->b);
  else if (!strcmp(name, "read")) do_read(zero_fd, s->a, s->b, s->buf);
  else if (!strcmp(name, "read-sizes")) do_read_sizes(zero_fd, s->a, s->buf);
  else if (!strcmp(name, "write")) do_write(null_fd, s->a, s->b, s->buf);
  else if (!strcmp(name, "openat")) do_openat(s->a, s->path, O_RDONLY | O_CREAT, 0);
  else if (!strcmp(name, "open-missing")) do_openat(s->a, s->path, O_RDONLY, 1);
  else if (!strcmp(name, "fork")) do_fork(s->a);
  else if (!strcmp(name, "child-getppid")) do_child_getppid(s->a);
  else if (!strcmp(name, "spin")) do_spin(s->a);
  else if (!strcmp(name, "connect")) do_connect(s->a, s->b, 0);
  else if (!strcmp(name, "connect6")) do_connect(s->a, s->b, 1);
  else if (!strcmp(name, "connect-refused")) do_connect_refused(s->a, s->b);
  else if (!strcmp(name, "threads")) do_threads(s->a);
  else if (!strcmp(name, "chown")) do_chown(s->a, s->path);
  else if (!strcmp(name, "statx")) do_statx(s->a, s->path);
  else if (!strcmp(name, "accept")) do_accept(s->a);
  else if (!strcmp(name, "file-write")) do_file_io(s->a, s->b, s->path, s->buf, 1);
  else if (!strcmp(name, "file-read")) do_file_io(s->a, s->b, s->path, s->buf, 0);
  else if (!strcmp(name, "mixed")) {
    do_getppid(s->a);
    do_read(zero_fd, s->a, s->b, s->buf);
  } else if (!strcmp(name, "sleep")) {
    for (int k = 0; k < s->nsleeps; ++k) sleep_ns(number(s->sleeps[k]) * 1000000LL);
    note(name, s->nsleeps);
    return;
  } else if (!strcmp(name, "nanosleep")) {
    for (int k = 0; k < s->nsleeps; ++k) {
      long long ns = number(s->sleeps[k]) * 1000000LL;
      struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
      while (syscall(SYS_nanosleep, &ts, &ts) != 0 && errno == EINTR) {
      }
    }
    note(name, s->nsleeps);
    return;
  }
  note(name, s->a);
}

int main(int argc, char** argv) {
  struct step steps[64];
  int count = parse_steps(argc, argv, steps, 64);
  int zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (zero_fd < 0 || null_fd < 0) die("open /dev/zero or /dev/null");
  for (int k = 0; k < count; ++k) {
    long size = steps[k].b;
    if (!strcmp(steps[k].name, "read-sizes")) size = steps[k].a;
    steps[k].buf = buffer_of(size);
    memset(steps[k].buf, 'x', size > 0 ? (size_t)size : 1);
  }
  if (prctl(PR_SET_NAME, "bpfql-wl", 0, 0, 0) != 0) die("prctl(PR_SET_NAME)");

  wait_for_release();
  for (int k = 0; k < count; ++k) run_step(&steps[k], zero_fd, null_fd);

  // One write for the whole report, after the measured part.
  if (write(1, report, report_len) != (ssize_t)report_len) die("write report");
  return 0;
}
