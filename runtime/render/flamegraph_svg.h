// An interactive flame graph as one self-contained SVG file, drawn by bpfql itself (no Perl,
// no network): frames as rectangles sized by their samples, a tooltip on each (<title>), zoom by
// clicking a frame (click the root to reset), and a search box (Ctrl-F or the "Search" label)
// that highlights matching frames and says what share of the samples they hold.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bpfql {

// `stacks`: folded stacks ("a;b;c", root first) with their counts. `title` heads the picture.
std::string flame_graph_svg(const std::vector<std::pair<std::string, uint64_t>>& stacks,
                            const std::string& title);

}  // namespace bpfql
