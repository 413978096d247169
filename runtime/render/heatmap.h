// Latency heatmaps of hist() and lhist() columns over time (`-f heatmap`): one line per interval
// and key in the terminal, a bucket per character shaded by its count ( ░▒▓█), or with
// `-o FILE.svg` one SVG picture per run: time across, buckets up, colour = count, a tooltip on
// every cell. Buckets are labelled in the value's unit ([4.19ms, 8.39ms)).
#pragma once

#include <memory>
#include <ostream>

#include "runtime/collect/output.h"

namespace bpfql {

std::unique_ptr<Output> make_heatmap_output(std::ostream& out, std::ostream& notes, bool svg);

}  // namespace bpfql
