// Flame graph SVG (see flamegraph_svg.h). Layout: a tree of frames merged by name along each
// path; children laid out left to right in name order (as flamegraph.pl does), width
// proportional to samples, one row per depth with the root at the bottom.
#include "runtime/render/flamegraph_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

namespace bpfql {
namespace {

struct Node {
  std::string name;
  uint64_t total = 0;
  std::map<std::string, std::unique_ptr<Node>> children;
};

constexpr int kWidth = 1200;
constexpr int kFrameHeight = 16;
constexpr int kPadTop = 48;
constexpr int kPadBottom = 24;
constexpr int kPadSide = 10;
constexpr double kMinWidth = 0.1;  // pixels: narrower frames are left out (they would not show)

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') out += '?';
        else out += c;
    }
  }
  return out;
}

// A warm colour from the frame's name, so that one function has one colour everywhere.
std::string frame_colour(std::string_view name) {
  uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  int r = 205 + static_cast<int>(h % 50);
  int g = 80 + static_cast<int>((h >> 8) % 150);
  int b = static_cast<int>((h >> 16) % 55);
  return fmt::format("rgb({},{},{})", r, g, b);
}

int depth_of(const Node& n) {
  int d = 0;
  for (const auto& [k, c] : n.children) d = std::max(d, depth_of(*c));
  return d + 1;
}

struct Drawing {
  std::string frames;
  double scale = 0;  // pixels per sample
  uint64_t root_total = 0;
  int height = 0;
};

void draw(const Node& n, double x, int depth, Drawing& d) {
  double w = static_cast<double>(n.total) * d.scale;
  if (w < kMinWidth) return;
  int y = d.height - kPadBottom - (depth + 1) * kFrameHeight;
  double pct = d.root_total ? 100.0 * static_cast<double>(n.total) / static_cast<double>(d.root_total) : 0;
  std::string name = xml_escape(n.name);
  d.frames += fmt::format(
      "<g class=\"f\"><title>{} ({} samples, {:.2f}%)</title>"
      "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" rx=\"2\"/>"
      "<text x=\"{:.1f}\" y=\"{}\"></text></g>\n",
      name, n.total, pct, x, y, w, kFrameHeight - 1, frame_colour(n.name), x + 3,
      y + kFrameHeight - 4);
  double child_x = x;
  for (const auto& [k, c] : n.children) {
    draw(*c, child_x, depth + 1, d);
    child_x += static_cast<double>(c->total) * d.scale;
  }
}

// Zoom, search, labels that fit: plain ECMAScript over the SVG DOM, no external resources.
constexpr const char* kScript = R"JS(
var frames = [], total = 0, width = 0, side = 0;
function init() {
  var svg = document.documentElement;
  width = +svg.getAttribute("data-width"); side = +svg.getAttribute("data-side");
  var gs = document.querySelectorAll("g.f");
  for (var i = 0; i < gs.length; i++) {
    var r = gs[i].querySelector("rect");
    var f = {g: gs[i], r: r, t: gs[i].querySelector("text"), x: +r.getAttribute("x"),
             w: +r.getAttribute("width"), name: gs[i].querySelector("title").textContent.replace(/ \([0-9]+ samples.*$/, "")};
    frames.push(f);
    gs[i].addEventListener("click", (function(f) { return function() { zoom(f); }; })(f));
  }
  if (frames.length) total = frames[0].w;
  place(side, width - 2 * side, 0, total);
  document.getElementById("search").addEventListener("click", ask);
  document.getElementById("reset").addEventListener("click", function() { zoom(frames[0]); });
  window.addEventListener("keydown", function(e) {
    if ((e.ctrlKey || e.metaKey) && e.key == "f") { e.preventDefault(); ask(); }
  });
}
function place(left, span, x0, w0) {
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i], x = left + (f.x - side - x0) * span / w0, w = f.w * span / w0;
    var hidden = f.x + f.w <= side + x0 + 1e-6 || f.x >= side + x0 + w0 - 1e-6;
    f.g.style.display = hidden ? "none" : "";
    f.r.setAttribute("x", x.toFixed(1)); f.r.setAttribute("width", w.toFixed(1));
    f.t.setAttribute("x", (x + 3).toFixed(1));
    var fit = Math.floor((w - 6) / 7);
    f.t.textContent = fit < 3 ? "" : (f.name.length <= fit ? f.name : f.name.slice(0, fit - 2) + "..");
  }
}
function zoom(f) {
  place(side, width - 2 * side, f.x - side, f.w);
  document.getElementById("reset").style.display = f === frames[0] ? "none" : "";
}
function ask() {
  var term = prompt("Search frames (regular expression)", "");
  if (term === null) return;
  search(term);
}
function search(term) {
  var re = term ? new RegExp(term) : null, matched = 0, seen = [];
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i], hit = re && re.test(f.name);
    f.r.setAttribute("class", hit ? "match" : "");
    if (!hit) continue;
    var inside = false;  // a match inside another match is counted once
    for (var j = 0; j < seen.length; j++)
      if (f.x >= seen[j].x - 1e-6 && f.x + f.w <= seen[j].x + seen[j].w + 1e-6 && +f.r.getAttribute("y") < +seen[j].r.getAttribute("y")) inside = true;
    if (!inside) { matched += f.w; seen.push(f); }
  }
  document.getElementById("matched").textContent =
      re ? "Matched: " + (total ? (100 * matched / total).toFixed(1) : "0") + "%" : "";
  return re ? matched / total : 0;
}
)JS";

}  // namespace

std::string flame_graph_svg(const std::vector<std::pair<std::string, uint64_t>>& stacks,
                            const std::string& title) {
  Node root;
  root.name = "all";
  for (const auto& [folded, count] : stacks) {
    if (count == 0) continue;
    root.total += count;
    Node* at = &root;
    size_t start = 0;
    while (start <= folded.size()) {
      size_t end = folded.find(';', start);
      if (end == std::string::npos) end = folded.size();
      std::string frame = folded.substr(start, end - start);
      auto& child = at->children[frame];
      if (!child) {
        child = std::make_unique<Node>();
        child->name = frame;
      }
      child->total += count;
      at = child.get();
      start = end + 1;
    }
  }
  Drawing d;
  d.root_total = root.total;
  d.height = kPadTop + depth_of(root) * kFrameHeight + kPadBottom;
  d.scale = root.total ? static_cast<double>(kWidth - 2 * kPadSide) / static_cast<double>(root.total) : 0;
  draw(root, kPadSide, 0, d);
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" standalone=\"no\"?>\n"
      "<svg version=\"1.1\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "xmlns=\"http://www.w3.org/2000/svg\" data-width=\"{0}\" data-side=\"{2}\" onload=\"init()\">\n"
      "<style>text {{ font-family: monospace; font-size: 12px; fill: #000; pointer-events: none; }}\n"
      "g.f:hover rect {{ stroke: #000; stroke-width: 0.5; cursor: pointer; }}\n"
      "rect.match {{ fill: rgb(230,0,230); }}\n"
      "#title {{ font-size: 17px; }} .ui {{ cursor: pointer; fill: #333; }}</style>\n"
      "<script type=\"text/ecmascript\"><![CDATA[{3}]]></script>\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#fdf6ec\"/>\n"
      "<text id=\"title\" x=\"{4}\" y=\"24\" text-anchor=\"middle\">{5}</text>\n"
      "<text id=\"reset\" class=\"ui\" x=\"{2}\" y=\"24\" style=\"display:none\">Reset Zoom</text>\n"
      "<text id=\"search\" class=\"ui\" x=\"{6}\" y=\"24\">Search</text>\n"
      "<text id=\"matched\" x=\"{6}\" y=\"{7}\"></text>\n",
      kWidth, d.height, kPadSide, kScript, kWidth / 2, xml_escape(title), kWidth - kPadSide - 60,
      d.height - 6);
  svg += d.frames;
  svg += "</svg>\n";
  return svg;
}

}  // namespace bpfql
