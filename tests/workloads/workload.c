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
//   contend MS           pin to the CPU it runs on, fork a child (pinned there too), and both
//                        spin MS ms of CPU time: they take turns on one CPU, so each is
//                        preempted while runnable (run-queue latency tests); the child is reaped
//   connect N PORT       N TCP connections to 127.0.0.1:PORT, each closed once established
//                        (the test listens there), for the sock/tcp tracepoints
//   connect6 N PORT      the same to [::1]:PORT
//   connect-refused N PORT  N TCP connects to 127.0.0.1:PORT where nothing listens (each is
//                        refused: the SYN is dropped with reason NO_SOCKET)
//   threads N            N pthread_create()s of bpfql_wl_thread, each joined before the next
//   nanosleep MS...      one nanosleep() (the old system call, not clock_nanosleep) per value
//   chown N PATH         N fchownat(PATH, 65534, -1): as root, each is a CAP_CHOWN check
//   statx N PATH         N statx(PATH) calls, whether PATH exists or not
//   pingpong N           N round trips over two pipes with a child named "bpfql-pong": this
//                        process writes a byte and blocks in read() until the child answers;
//                        the child answers only once /proc/PID/wchan says this process has
//                        switched out to sleep, so this process blocks in pipe_read exactly N
//                        times and is woken by the child's pipe_write N times (then once more
//                        by the child's exit, if it is in waitpid by then)
//   spin-pinned K CPU MS  this process and K - 1 children named "bpfql-spin", all pinned to
//                        CPU and busy for MS milliseconds of wall time (never sleeping), the
//                        children reaped: while this process runs there, its run queue holds
//                        at least the K of them
//   syncs N PATH         N rounds of sync(), syncfs(fd), fsync(fd), fdatasync(fd) on PATH (opened,
//                        O_CREAT, before the wait; the file is left behind)
//   malloc N SIZE        N malloc(SIZE)s, kept (at most 4096 blocks held in all), all called from
//                        bpfql_wl_malloc
//   malloc-other N SIZE  the same, called from another function (bpfql_wl_malloc_other): a second
//                        allocating stack; its blocks join the malloc steps' in allocation order
//   free M               free() of the M blocks malloc steps allocated first (M <= blocks held)
//   connect-dropped N PORT  listens on 127.0.0.1:PORT with an accept queue of one, fills it with a
//                        connection, then connects again with TCP_SYNCNT N: the listener drops
//                        that SYN, which the kernel retransmits N times before connect fails
//                        (ETIMEDOUT). Run it in a network namespace of its own with
//                        net.ipv4.tcp_syn_linear_timeouts=0: with linear timeouts the retries
//                        are bounded by time (1 s apart up to the 7 s that N = 2 allows), not count
//   accept N             listen on 127.0.0.1 (a port the kernel picks), make N connections to
//                        it, then take them: accept() for the even ones, accept4() for the odd
//                        ones; reports "done accept-port PORT" and "done accept-client PORT" for
//                        each client's port, in accept order
//   file-write N SIZE PATH  open PATH (O_WRONLY|O_CREAT|O_APPEND), N write()s of SIZE bytes, close
//   file-read N SIZE PATH   open PATH (O_RDONLY), N read()s of exactly SIZE bytes, close (PATH
//                        must hold N * SIZE bytes: write them first)
//   levels N DEPTH       N calls of bpfql_wl_levels(DEPTH), which calls itself with DEPTH - 1
//                        down to 0: DEPTH + 1 nested calls each time (the level's argument is
//                        DEPTH minus its depth)
//   ticks N MS           N calls of bpfql_wl_tick(), MS milliseconds apart (a sleep between two
//                        calls, none after the last); each call makes one call of bpfql_wl_tock()
//   starve CPU MS        this process and a child named "bpfql-hog" spin on CPU while a third, a
//                        child named "bpfql-starved" at nice 19, spins MS ms of its own CPU time
//                        there and exits; then the hog is killed and reaped. The starved child
//                        gets a sliver of the CPU: each time it is preempted it waits in the run
//                        queue for a long time (hundreds of ms) while the two hogs take turns.
//                        Reports "done starve-hog PID" and "done starve-starved PID"
//   fsyncs N PATH        N rounds of a 4096-byte write appended to PATH (opened O_CREAT before the
//                        wait, the file is left behind) and an fsync() of it: each round waits
//                        for the disk's completion interrupt at least once
//   udp-loop N           N UDP datagrams of 64 bytes to a socket of its own on 127.0.0.1, each
//                        received before the next is sent: each is delivered by a NET_RX softirq
//                        run of its own
//   recurse D N          N calls of bpfql_wl_recurse(D, 1), which calls itself with depth D-1
//                        down to 0 (not a tail call: each depth is a frame of its own); the call
//                        of depth d returns d + 1000 * tag (tag: its second argument)
//   close-bad N          N close(-1) calls (system call 3), each failing with EBADF
//   nosys N              N calls of system call number 1000, which no kernel has (ENOSYS):
//                        raw_syscalls sees them under id 1000
//   ia32-read N          N 32-bit read(-1, ...) calls (int $0x80, 32-bit number 3, which is
//                        close's 64-bit number), each failing with EBADF: raw_syscalls sees them
//                        under id 3, syscalls:* events leave them out
//   recurse-signal D H   one bpfql_wl_recurse(D, 1) whose innermost call (depth 0) raises
//                        SIGUSR1; the handler, on the same stack below it, makes the calls
//                        bpfql_wl_recurse(H, 2) .. depth 0 while those of tag 1 are in flight
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
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

static void do_close_bad(long n) {
  for (long i = 0; i < n; ++i)
    if (syscall(SYS_close, -1) != -1 || errno != EBADF) die("close(-1) did not fail with EBADF");
}

// The 32-bit ABI from a 64-bit process: int $0x80 takes the number in eax and the arguments in
// ebx, ecx, edx (r8-r11 are not preserved by every kernel).
static void do_ia32_read(long n) {
#if defined(__x86_64__)
  for (long i = 0; i < n; ++i) {
    long ret;
    __asm__ volatile("int $0x80"
                     : "=a"(ret)
                     : "a"(3L), "b"(-1L), "c"(0L), "d"(0L)
                     : "memory", "r8", "r9", "r10", "r11");
    if ((int)ret != -EBADF) {
      errno = ret < 0 ? (int)-ret : 0;
      die("32-bit read(-1) did not fail with EBADF (no 32-bit system calls here?)");
    }
  }
#else
  (void)n;
  errno = ENOSYS;
  die("ia32-read: x86_64 only");
#endif
}

static void do_nosys(long n) {
  for (long i = 0; i < n; ++i) syscall(1000);
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

static void do_contend(long ms) {
  cpu_set_t before, one;
  if (sched_getaffinity(0, sizeof before, &before) != 0) die("sched_getaffinity");
  int cpu = sched_getcpu();
  if (cpu < 0) die("sched_getcpu");
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) die("sched_setaffinity");
  pid_t child = fork();  // inherits the affinity
  if (child < 0) die("fork");
  if (child == 0) {
    do_spin(ms);
    _exit(0);
  }
  do_spin(ms);
  if (waitpid(child, NULL, 0) < 0) die("waitpid");
  if (sched_setaffinity(0, sizeof before, &before) != 0) die("sched_setaffinity");
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

// Until PID has switched out to sleep: /proc/PID/wchan names where it waits only once it is off
// its run queue ("0" while it runs, even after it set its state to sleep), so a write after
// this wakes a sleeping task and is not lost in the instant before it switched out.
static void wait_until_blocked(pid_t pid) {
  char path[64], buf[128];
  snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid);
  for (;;) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die(path);
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got < 0) die(path);
    buf[got > 0 ? got : 0] = '\0';
    if (got > 0 && strcmp(buf, "0") != 0) return;
    sched_yield();
  }
}

static void do_pingpong(long n) {
  int ping[2], pong[2];
  if (pipe2(ping, O_CLOEXEC) != 0 || pipe2(pong, O_CLOEXEC) != 0) die("pipe2");
  pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) die("fork");
  char byte = 'x';
  if (child == 0) {
    prctl(PR_SET_NAME, "bpfql-pong", 0, 0, 0);
    for (long i = 0; i < n; ++i) {
      if (read(ping[0], &byte, 1) != 1) _exit(1);
      wait_until_blocked(parent);
      if (write(pong[1], &byte, 1) != 1) _exit(1);
    }
    _exit(0);
  }
  for (long i = 0; i < n; ++i) {
    if (write(ping[1], &byte, 1) != 1) die("write ping");
    if (read(pong[0], &byte, 1) != 1) die("read pong");
  }
  int status = 0;
  if (waitpid(child, &status, 0) < 0) die("waitpid");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("pingpong child");
  close(ping[0]), close(ping[1]), close(pong[0]), close(pong[1]);
}

static long long monotonic_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) die("clock_gettime");
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin_wall(long ms) {
  long long until = monotonic_ns() + ms * 1000000LL;
  volatile unsigned long sink = 0;
  while (monotonic_ns() < until) {
    for (int j = 0; j < 10000; ++j) sink += (unsigned long)j;
  }
}

// This process and K - 1 children, all on one CPU; this process's affinity is restored after.
static void do_spin_pinned(long k, long cpu, long ms) {
  pid_t children[64];
  if (k < 1 || k > 64) usage("spin-pinned: K must be 1..64");
  cpu_set_t set, before;
  CPU_ZERO(&set);
  CPU_SET((int)cpu, &set);
  if (sched_getaffinity(0, sizeof before, &before) != 0) die("sched_getaffinity");
  if (sched_setaffinity(0, sizeof set, &set) != 0) usage("spin-pinned: no such CPU");
  for (long i = 0; i + 1 < k; ++i) {
    children[i] = fork();
    if (children[i] < 0) die("fork");
    if (children[i] == 0) {  // inherits the affinity
      prctl(PR_SET_NAME, "bpfql-spin", 0, 0, 0);
      spin_wall(ms);
      _exit(0);
    }
  }
  spin_wall(ms);
  for (long i = 0; i + 1 < k; ++i)
    if (waitpid(children[i], NULL, 0) < 0) die("waitpid");
  if (sched_setaffinity(0, sizeof before, &before) != 0) die("sched_setaffinity");
}

static void do_chown(long n, const char* path) {
  for (long i = 0; i < n; ++i)
    if (fchownat(AT_FDCWD, path, 65534, (gid_t)-1, 0) != 0) die(path);
}

static void do_statx(long n, const char* path) {
  struct statx buf;
  for (long i = 0; i < n; ++i) statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &buf);
}

static void do_syncs(long n, int fd) {
  for (long i = 0; i < n; ++i) {
    sync();
    if (syncfs(fd) != 0 || fsync(fd) != 0 || fdatasync(fd) != 0) die("syncfs/fsync/fdatasync");
  }
}

// Not static, and never inlined or cloned: funcinterval probes them by name.
__attribute__((noinline, noipa, used)) void bpfql_wl_tock(long i) { __asm__ volatile("" ::"r"(i) : "memory"); }

__attribute__((noinline, noipa, used)) void bpfql_wl_tick(long i) {
  bpfql_wl_tock(i);
  __asm__ volatile("" ::: "memory");
}

// Not static, and never inlined, cloned or turned into a loop: entry-value tests probe its
// entry and return at each depth.
static volatile sig_atomic_t recurse_raises;
__attribute__((noinline, noipa, used)) long bpfql_wl_recurse(long depth, long tag) {
  if (depth > 0) {
    long r = bpfql_wl_recurse(depth - 1, tag);
    __asm__ volatile("" : "+r"(r)::"memory");
  } else if (tag == 1 && recurse_raises) {
    recurse_raises = 0;
    raise(SIGUSR1);  // delivered before raise() returns: the handler runs here, mid-call
  }
  __asm__ volatile("" ::: "memory");
  return depth + 1000 * tag;
}

static long recurse_handler_depth;
static void recurse_handler(int sig) {
  (void)sig;
  bpfql_wl_recurse(recurse_handler_depth, 2);
}

static void do_recurse(long depth, long n) {
  for (long i = 0; i < n; ++i) bpfql_wl_recurse(depth, 1);
}

static void do_recurse_signal(long depth, long handler_depth) {
  struct sigaction sa = {0};
  sa.sa_handler = recurse_handler;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR1, &sa, NULL) != 0) die("sigaction");
  recurse_handler_depth = handler_depth;
  recurse_raises = 1;
  bpfql_wl_recurse(depth, 1);
  if (recurse_raises) die("recurse-signal: the signal was not raised");
}

// Recursive, and not turned into a loop: each level is a call a uprobe and a uretprobe see.
__attribute__((noinline, noipa, used)) long bpfql_wl_levels(long level) {
  long below = level > 0 ? bpfql_wl_levels(level - 1) : 0;
  __asm__ volatile("" : "+r"(below) :: "memory");
  return below + 1;
}

static void do_levels(long n, long depth) {
  long calls = 0;
  for (long i = 0; i < n; ++i) calls += bpfql_wl_levels(depth);
  if (calls != n * (depth + 1)) die("levels: a level was skipped");
}

static void do_ticks(long n, long ms) {
  for (long i = 0; i < n; ++i) {
    if (i > 0) sleep_ns(ms * 1000000LL);
    bpfql_wl_tick(i);
  }
}

static void do_starve(long cpu, long ms) {
  cpu_set_t set, before;
  CPU_ZERO(&set);
  CPU_SET((int)cpu, &set);
  if (sched_getaffinity(0, sizeof before, &before) != 0) die("sched_getaffinity");
  if (sched_setaffinity(0, sizeof set, &set) != 0) usage("starve: no such CPU");
  pid_t hog = fork();  // the children inherit the affinity
  if (hog < 0) die("fork");
  if (hog == 0) {
    prctl(PR_SET_NAME, "bpfql-hog", 0, 0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);  // never outlives this process, however it ends
    if (getppid() == 1) _exit(1);
    for (;;) spin_wall(1000);
  }
  pid_t starved = fork();
  if (starved < 0) die("fork");
  if (starved == 0) {
    prctl(PR_SET_NAME, "bpfql-starved", 0, 0, 0);
    if (setpriority(PRIO_PROCESS, 0, 19) != 0) _exit(1);
    do_spin(ms);
    _exit(0);
  }
  int status = 0;
  for (;;) {  // spinning, not waiting: this process is the second hog
    pid_t done = waitpid(starved, &status, WNOHANG);
    if (done < 0) die("waitpid");
    if (done == starved) break;
    spin_wall(1);
  }
  kill(hog, SIGKILL);
  if (waitpid(hog, NULL, 0) < 0) die("waitpid");
  note("starve-hog", hog);
  note("starve-starved", starved);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("starve child");
  if (sched_setaffinity(0, sizeof before, &before) != 0) die("sched_setaffinity");
}

static void do_fsyncs(long n, int fd, const char* buf) {
  for (long i = 0; i < n; ++i)
    if (write(fd, buf, 4096) != 4096 || fsync(fd) != 0) die("fsyncs: write or fsync");
}

static void do_udp_loop(long n) {
  struct sockaddr_in addr = {.sin_family = AF_INET};
  socklen_t len = sizeof addr;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, (struct sockaddr*)&addr, len) != 0 ||
      getsockname(fd, (struct sockaddr*)&addr, &len) != 0)
    die("udp-loop: bind to 127.0.0.1");
  char datagram[64] = {0};
  for (long i = 0; i < n; ++i) {
    if (sendto(fd, datagram, sizeof datagram, 0, (struct sockaddr*)&addr, len) != sizeof datagram)
      die("udp-loop: sendto");
    if (recv(fd, datagram, sizeof datagram, 0) != sizeof datagram) die("udp-loop: recv");
  }
  close(fd);
}

#define MAX_BLOCKS 4096
// Global, so the compiler cannot drop a malloc whose block is never used.
void* bpfql_wl_blocks[MAX_BLOCKS];
static long blocks_held, blocks_freed;

// Not static and never inlined: each is its own frame, by name, in the allocating user stack.
__attribute__((noinline)) void bpfql_wl_malloc(long n, long size) {
  if (blocks_held + n > MAX_BLOCKS) usage("malloc: more than 4096 blocks");
  for (long i = 0; i < n; ++i) {
    bpfql_wl_blocks[blocks_held] = malloc((size_t)size);
    if (!bpfql_wl_blocks[blocks_held++]) die("malloc");
  }
}

__attribute__((noinline)) void bpfql_wl_malloc_other(long n, long size) {
  if (blocks_held + n > MAX_BLOCKS) usage("malloc-other: more than 4096 blocks");
  for (long i = 0; i < n; ++i) {
    bpfql_wl_blocks[blocks_held] = malloc((size_t)size);
    if (!bpfql_wl_blocks[blocks_held++]) die("malloc");
  }
}

static void do_free(long m) {
  if (blocks_freed + m > blocks_held) usage("free: more blocks than malloc steps allocated");
  for (long i = 0; i < m; ++i) free(bpfql_wl_blocks[blocks_freed++]);
}

static void do_connect_dropped(long syn_retries, long port) {
  struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int first = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0 || first < 0 || fd < 0) die("socket");
  // Backlog 0: the queue holds one connection (the kernel's test is "more than the backlog").
  if (bind(listener, (struct sockaddr*)&v4, sizeof v4) != 0 || listen(listener, 0) != 0)
    die("connect-dropped: listen");
  if (connect(first, (struct sockaddr*)&v4, sizeof v4) != 0) die("connect-dropped: first connect");
  int count = (int)syn_retries;
  if (setsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &count, sizeof count) != 0) die("TCP_SYNCNT");
  if (connect(fd, (struct sockaddr*)&v4, sizeof v4) == 0 || errno != ETIMEDOUT)
    usage("connect-dropped: the SYN was answered");
  close(fd);
  close(first);
  close(listener);
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
  long a, b, c;
  const char* path;
  char** sleeps;
  int nsleeps;
  char* buf;
  int fd;  // syncs, fsyncs: PATH, opened before the wait
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
        !strcmp(name, "threads") || !strcmp(name, "pingpong") || !strcmp(name, "free") ||
        !strcmp(name, "contend") || !strcmp(name, "accept") || !strcmp(name, "udp-loop") ||
        !strcmp(name, "close-bad") || !strcmp(name, "ia32-read") || !strcmp(name, "nosys")) {
      args_needed = 1;
    } else if (!strcmp(name, "getppid-paced") || !strcmp(name, "read") || !strcmp(name, "write") ||
               !strcmp(name, "openat") || !strcmp(name, "open-missing") || !strcmp(name, "mixed") ||
               !strcmp(name, "connect") || !strcmp(name, "connect6") ||
               !strcmp(name, "connect-refused") || !strcmp(name, "chown") || !strcmp(name, "statx") ||
               !strcmp(name, "syncs") || !strcmp(name, "malloc") || !strcmp(name, "malloc-other") ||
               !strcmp(name, "connect-dropped") || !strcmp(name, "ticks") || !strcmp(name, "starve") ||
               !strcmp(name, "fsyncs") || !strcmp(name, "recurse") || !strcmp(name, "levels") ||
               !strcmp(name, "recurse-signal")) {
      args_needed = 2;
    } else if (!strcmp(name, "spin-pinned")) {
      if (i + 3 > argc) usage("missing step arguments");
      s->a = number(argv[i]);
      s->b = number(argv[i + 1]);
      s->c = number(argv[i + 2]);
      i += 3;
      continue;
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
                     !strcmp(name, "statx") || !strcmp(name, "syncs") || !strcmp(name, "fsyncs");
      if (path_arg) s->path = argv[i + 1];
      else s->b = number(argv[i + 1]);
    }
    if ((!strcmp(name, "connect") || !strcmp(name, "connect6") || !strcmp(name, "connect-refused") ||
         !strcmp(name, "connect-dropped")) &&
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
  else if (!strcmp(name, "close-bad")) do_close_bad(s->a);
  else if (!strcmp(name, "ia32-read")) do_ia32_read(s->a);
  else if (!strcmp(name, "nosys")) do_nosys(s->a);
  else if (!strcmp(name, "getppid-paced")) do_getppid_paced(s->a, s->b);
  else if (!strcmp(name, "read")) do_read(zero_fd, s->a, s->b, s->buf);
  else if (!strcmp(name, "read-sizes")) do_read_sizes(zero_fd, s->a, s->buf);
  else if (!strcmp(name, "write")) do_write(null_fd, s->a, s->b, s->buf);
  else if (!strcmp(name, "openat")) do_openat(s->a, s->path, O_RDONLY | O_CREAT, 0);
  else if (!strcmp(name, "open-missing")) do_openat(s->a, s->path, O_RDONLY, 1);
  else if (!strcmp(name, "fork")) do_fork(s->a);
  else if (!strcmp(name, "child-getppid")) do_child_getppid(s->a);
  else if (!strcmp(name, "spin")) do_spin(s->a);
  else if (!strcmp(name, "contend")) do_contend(s->a);
  else if (!strcmp(name, "connect")) do_connect(s->a, s->b, 0);
  else if (!strcmp(name, "connect6")) do_connect(s->a, s->b, 1);
  else if (!strcmp(name, "connect-refused")) do_connect_refused(s->a, s->b);
  else if (!strcmp(name, "threads")) do_threads(s->a);
  else if (!strcmp(name, "chown")) do_chown(s->a, s->path);
  else if (!strcmp(name, "statx")) do_statx(s->a, s->path);
  else if (!strcmp(name, "pingpong")) do_pingpong(s->a);
  else if (!strcmp(name, "spin-pinned")) do_spin_pinned(s->a, s->b, s->c);
  else if (!strcmp(name, "syncs")) do_syncs(s->a, s->fd);
  else if (!strcmp(name, "malloc")) bpfql_wl_malloc(s->a, s->b);
  else if (!strcmp(name, "malloc-other")) bpfql_wl_malloc_other(s->a, s->b);
  else if (!strcmp(name, "free")) do_free(s->a);
  else if (!strcmp(name, "connect-dropped")) do_connect_dropped(s->a, s->b);
  else if (!strcmp(name, "accept")) do_accept(s->a);
  else if (!strcmp(name, "ticks")) do_ticks(s->a, s->b);
  else if (!strcmp(name, "levels")) do_levels(s->a, s->b);
  else if (!strcmp(name, "starve")) do_starve(s->a, s->b);
  else if (!strcmp(name, "fsyncs")) do_fsyncs(s->a, s->fd, s->buf);
  else if (!strcmp(name, "udp-loop")) do_udp_loop(s->a);
  else if (!strcmp(name, "recurse")) do_recurse(s->a, s->b);
  else if (!strcmp(name, "recurse-signal")) do_recurse_signal(s->a, s->b);
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
    if (!strcmp(steps[k].name, "fsyncs")) size = 4096;
    steps[k].buf = buffer_of(size);
    memset(steps[k].buf, 'x', size > 0 ? (size_t)size : 1);
    if (!strcmp(steps[k].name, "syncs") || !strcmp(steps[k].name, "fsyncs")) {
      int append = !strcmp(steps[k].name, "fsyncs") ? O_APPEND : 0;
      steps[k].fd = open(steps[k].path, O_RDWR | O_CREAT | O_CLOEXEC | append, 0600);
      if (steps[k].fd < 0) die(steps[k].path);
    }
  }
  if (prctl(PR_SET_NAME, "bpfql-wl", 0, 0, 0) != 0) die("prctl(PR_SET_NAME)");

  wait_for_release();
  for (int k = 0; k < count; ++k) run_step(&steps[k], zero_fd, null_fd);

  // One write for the whole report, after the measured part.
  if (write(1, report, report_len) != (ssize_t)report_len) die("write report");
  return 0;
}
