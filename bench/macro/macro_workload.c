// bench/macro: a fixed, syscall-heavy, multi-process workload for the always-on benchmark
// (bench/macro/run.py). Usage: macro_workload PROCS ITERS. PROCS processes (in pairs joined by
// pipes) each run ITERS rounds of: 4 getppid, a 64-byte read of /dev/zero and write to
// /dev/null, and every 4th round an openat+close of /etc/hostname and a one-byte ping-pong with
// its partner (two context switches); every 500th round a fork+exec of /bin/true. The same work
// every run; prints the wall time in seconds and the rounds per second on one line of JSON.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void worker(long iters, int in, int out, int leader) {
  char buf[64];
  int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
  if (zero < 0 || null < 0) _exit(2);
  for (long i = 0; i < iters; ++i) {
    for (int k = 0; k < 4; ++k) syscall(SYS_getppid);
    if (read(zero, buf, sizeof buf) != sizeof buf) _exit(3);
    if (write(null, buf, sizeof buf) != sizeof buf) _exit(3);
    if (i % 4 == 0) {
      int fd = open("/etc/hostname", O_RDONLY);
      if (fd >= 0) close(fd);
      char c = 'x';
      if (leader) {  // ping, then wait for the pong
        if (write(out, &c, 1) != 1 || read(in, &c, 1) != 1) _exit(4);
      } else {
        if (read(in, &c, 1) != 1 || write(out, &c, 1) != 1) _exit(4);
      }
    }
    if (i % 500 == 0) {
      pid_t child = fork();
      if (child == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
      }
      if (child > 0) waitpid(child, NULL, 0);
    }
  }
  _exit(0);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PROCS ITERS (PROCS even)\n", argv[0]);
    return 2;
  }
  int procs = atoi(argv[1]);
  long iters = atol(argv[2]);
  if (procs < 2 || procs % 2 || iters < 1) return 2;
  double start = now();
  for (int p = 0; p < procs; p += 2) {
    int ab[2], ba[2];
    if (pipe(ab) || pipe(ba)) return 1;
    if (fork() == 0) worker(iters, ba[0], ab[1], 1);
    if (fork() == 0) worker(iters, ab[0], ba[1], 0);
    close(ab[0]), close(ab[1]), close(ba[0]), close(ba[1]);
  }
  int failed = 0, status;
  while (wait(&status) > 0)
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  double seconds = now() - start;
  printf("{\"seconds\": %.4f, \"rounds_per_s\": %.0f, \"failed\": %d}\n", seconds,
         (double)procs * (double)iters / seconds, failed);
  return failed;
}
