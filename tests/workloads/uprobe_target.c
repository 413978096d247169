// bpfql-uprobe-target N: calls bpfql_target_add(i, 1000 + i) and fires the USDT probe
// bpfql_test:tick(i, i * 2) for i = 0..N-1, so uprobe/uretprobe/usdt tests know every argument
// and return value. Like bpfql-workload it names itself ("bpfql-ut") and waits until stdin is
// readable (poll, no read) before the calls; then it prints "done N SUM" (SUM of the returns).
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/sdt.h>

// noipa: no inlining, cloning or constant propagation, so the symbol is called with real args.
__attribute__((noinline, noipa, used)) long bpfql_target_add(long a, long b) {
  __asm__ volatile("" ::: "memory");
  return a + b;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: bpfql-uprobe-target N\n");
    return 2;
  }
  long n = strtol(argv[1], NULL, 10);
  if (n < 0) return 2;
  if (prctl(PR_SET_NAME, "bpfql-ut", 0, 0, 0) != 0) return 1;

  struct pollfd p = {.fd = 0, .events = POLLIN};
  while (poll(&p, 1, -1) < 0) {
    if (errno != EINTR) return 1;
  }

  long sum = 0;
  for (long i = 0; i < n; ++i) {
    sum += bpfql_target_add(i, 1000 + i);
    long twice = i * 2;
    DTRACE_PROBE2(bpfql_test, tick, i, twice);
  }
  printf("done %ld %ld\n", n, sum);
  return 0;
}
