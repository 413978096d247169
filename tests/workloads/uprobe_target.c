// bpfql-uprobe-target N [LINGER_MS]: calls bpfql_target_add(i, 1000 + i), fires the USDT probe
// bpfql_test:tick(i, i * 2) and calls bpfql_lib_ping(i) in libbpfql-usdt-lib.so (USDT
// bpfql_lib:ping(i, "even"/"odd"), returns 3 * i) for i = 0..N-1, so uprobe/uretprobe/usdt tests
// know every argument and return value. The calls come from bpfql_target_run(N), called by main,
// so user stacks have a known shape; before them, bpfql_target_note(&bpfql_target_run) is called
// once, so usym(arg0) has a code address to name. Like bpfql-workload it names itself
// ("bpfql-ut") and waits until stdin is readable (poll, no read) before the calls; then it prints
// "done N SUM" (SUM of bpfql_target_add's returns) and stays alive LINGER_MS more milliseconds
// (default 0), so that its memory map can still be read to symbolize its addresses.
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/sdt.h>
#include <time.h>

// noipa: no inlining, cloning or constant propagation, so the symbol is called with real args.
__attribute__((noinline, noipa, used)) long bpfql_target_add(long a, long b) {
  __asm__ volatile("" ::: "memory");
  return a + b;
}

long bpfql_lib_ping(long i);  // libbpfql-usdt-lib.so

__attribute__((noinline, noipa, used)) void bpfql_target_note(const void* code) {
  __asm__ volatile("" ::"r"(code) : "memory");
}

__attribute__((noinline, noipa, used)) long bpfql_target_run(long n) {
  long sum = 0;
  for (long i = 0; i < n; ++i) {
    sum += bpfql_target_add(i, 1000 + i);
    long twice = i * 2;
    DTRACE_PROBE2(bpfql_test, tick, i, twice);
    bpfql_lib_ping(i);
  }
  return sum;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: bpfql-uprobe-target N [LINGER_MS]\n");
    return 2;
  }
  long n = strtol(argv[1], NULL, 10);
  long linger_ms = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
  if (n < 0 || linger_ms < 0) return 2;
  if (prctl(PR_SET_NAME, "bpfql-ut", 0, 0, 0) != 0) return 1;

  struct pollfd p = {.fd = 0, .events = POLLIN};
  while (poll(&p, 1, -1) < 0) {
    if (errno != EINTR) return 1;
  }

  bpfql_target_note((const void*)bpfql_target_run);
  long sum = bpfql_target_run(n);
  printf("done %ld %ld\n", n, sum);
  fflush(stdout);
  struct timespec linger = {.tv_sec = linger_ms / 1000, .tv_nsec = (linger_ms % 1000) * 1000000L};
  while (nanosleep(&linger, &linger) != 0 && errno == EINTR) {
  }
  return 0;
}
