// Prometheus histograms carry a `_sum` (spec §6), which hist(), lhist() and percentile() do not
// keep: their kernel maps hold bucket counts only. `bpfql serve` asks for one hidden sum(E) next to
// each of them; `run` does not, so its programs pay nothing for it.
#pragma once

#include <string>
#include <string_view>

#include "compiler/check/check.h"

namespace bpfql {

// The column name of the sum added for histogram column `histogram` (never shown to users: it
// starts with a byte no query text can hold).
std::string histogram_sum_column(std::string_view histogram);
bool is_histogram_sum_column(std::string_view column);

// Adds sum(E) for every hist(E), lhist(E, ...) and percentile(E, ...) of the query, as an
// aggregate and a column named histogram_sum_column(...) of the histogram's column.
void add_histogram_sums(CheckedQuery& query);

}  // namespace bpfql
