// The flame graph SVG (runtime/render/flamegraph_svg.h): frames merged along their paths, sized
// by samples, with tooltips; text is XML-escaped. (Chromium renders it in the integration tests.)
#include <doctest/doctest.h>

#include <string>

#include "runtime/render/flamegraph_svg.h"

namespace b = bpfql;

namespace {
int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("flame graph SVG: one frame per distinct path, counts summed, tooltips with shares") {
  std::string svg = b::flame_graph_svg({{"main;read;vfs_read", 30}, {"main;read;vfs_read", 10},
                                        {"main;write", 60}},
                                       "bpfql: test");
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK(occurrences(svg, "<g class=\"f\">") == 5);  // all, main, read, vfs_read, write
  CHECK(svg.find("<title>all (100 samples, 100.00%)</title>") != std::string::npos);
  CHECK(svg.find("<title>main (100 samples, 100.00%)</title>") != std::string::npos);
  CHECK(svg.find("<title>vfs_read (40 samples, 40.00%)</title>") != std::string::npos);
  CHECK(svg.find("<title>write (60 samples, 60.00%)</title>") != std::string::npos);
  CHECK(svg.find("function search(") != std::string::npos);
  CHECK(svg.find("function zoom(") != std::string::npos);
}

TEST_CASE("flame graph SVG: frame names are escaped, an empty run is an empty picture") {
  std::string svg = b::flame_graph_svg({{"a<b>&\"c\"", 1}}, "x & y");
  CHECK(svg.find("a&lt;b&gt;&amp;&quot;c&quot;") != std::string::npos);
  CHECK(svg.find(">x &amp; y<") != std::string::npos);
  std::string empty = b::flame_graph_svg({}, "nothing");
  CHECK(empty.find("</svg>") != std::string::npos);
}
