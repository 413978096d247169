// The floor: an empty program on the probe under test. What it adds over no tracing is the
// probe's own cost (the tracepoint, the BPF dispatch); every other mode is measured above it.
// The harness attaches it with -t CATEGORY:NAME=floor, to one or several tracepoints.
int floor(void *ctx) {
  return 0;
}
