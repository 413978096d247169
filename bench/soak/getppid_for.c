// getppid_for SECONDS: calls getppid() in a tight loop for SECONDS (checking the clock every
// 4096 calls), then prints "calls=N" -- its own count, which the soak compares with bpfql's.
// Waits for a line on stdin first, so bpfql can attach before the first call.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: getppid_for SECONDS\n");
    return 2;
  }
  double seconds = atof(argv[1]);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) return 1;
  long long calls = 0;
  double end = now() + seconds;
  while (now() < end)
    for (int i = 0; i < 4096; ++i, ++calls) syscall(SYS_getppid);
  printf("calls=%lld\n", calls);
  return 0;
}
