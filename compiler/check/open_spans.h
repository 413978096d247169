// `report: open`: a span query whose rows are the spans still open at each print. Its keys and
// aggregated values are read in user space off each open span's stored value, so each one must
// be a capture itself (`begin.EXPR`) or `age`; nothing the end reads exists there.
#pragma once

#include "compiler/check/check.h"

namespace bpfql {

// Every key a capture, every aggregate's argument a capture or `age`; the query aggregates.
// `report_at` is where `report: open` was written.
Result<void> check_open_report(const SourceLoc& report_at, const CheckedQuery& q);

}  // namespace bpfql
