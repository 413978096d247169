// Text made safe for a terminal (implemented with the diagnostics, compiler/diagnostics.cpp).
#pragma once

#include <string>
#include <string_view>

namespace bpfql {

// A terminal must not take text for commands: control characters but tab (ESC starts escape
// sequences), C1 controls (U+0080..U+009F), bidirectional controls, line separators and invalid
// UTF-8 (a raw 0x9b is CSI to an 8-bit terminal) become one '?' per byte with `keep_columns`
// (a quoted source line, so the caret keeps its column), else \xHH per byte.
std::string terminal_safe(std::string_view text, bool keep_columns);

}  // namespace bpfql
