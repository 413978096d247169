// make_output: the one place that maps an OutputFormat to its renderer.
#include "runtime/collect/output.h"

#include <iostream>

#include "runtime/render/csv.h"
#include "runtime/render/folded.h"
#include "runtime/render/json.h"
#include "runtime/render/table.h"

namespace bpfql {

std::unique_ptr<Output> make_output(OutputFormat format, std::ostream& out) {
  switch (format) {
    case OutputFormat::Table:
      return make_table_output(out);
    case OutputFormat::Json:
      return make_json_output(out, std::cerr);
    case OutputFormat::Csv:
      return make_csv_output(out, std::cerr);
    case OutputFormat::Folded:
      return make_folded_output(out, std::cerr);
  }
  return make_table_output(out);
}

}  // namespace bpfql
