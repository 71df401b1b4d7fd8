// SPDX-License-Identifier: Apache-2.0
// The sections of the receipt page about what ran and with what: the command and its environment,
// the inputs with their digests, the view as a collapsible tree, the outputs (see
// receipt_report_html.h). Each list is cut at kMaxRows, and the view tree at kMaxViewDepth levels.
#include <fmt/format.h>

#include <map>
#include <memory>

#include "controller/receipt/html_text.h"
#include "controller/receipt/receipt_facts.h"
#include "controller/receipt/receipt_report_html.h"
#include "controller/receipt/receipt_report_parts.h"
#include "fingerprint/tree_json.h"

namespace sealrun::report::parts {

using nlohmann::json;
using receipt::member_list;
using receipt::member_text;

namespace {

constexpr size_t kMaxViewDepth = 48;  // deeper components are shown joined in one name
constexpr size_t kOpenUpTo = 24;      // a list this long or shorter starts open

std::string details(size_t count, const std::string& summary, const std::string& inner) {
  return fmt::format("<details{}><summary>{}</summary>\n{}</details>\n",
                     count <= kOpenUpTo ? " open" : "", summary, inner);
}

// A name recorded under `key`: the raw bytes of `<key>_b64` when present (docs/receipt.md).
std::string shown_name(const json& o, const std::string& key) {
  std::string b64 = member_text(o, (key + "_b64").c_str());
  if (!b64.empty())
    if (auto raw = tree_json::base64_decode(b64)) return html::text_cut(*raw, kMaxTextBytes);
  return field(o, key.c_str());
}

std::string stream_row(const json& c, const char* name) {
  if (!c.contains(name) || !c[name].is_object()) return "";
  const json& s = c[name];
  std::string tail = member_text(s, "tail");
  std::string shown_tail =
      tail.empty() ? ""
                   : fmt::format("<details><summary>the end of it</summary><pre>{}</pre></details>",
                                 html::lines(tail.substr(0, 2 * kMaxTextBytes)));
  return fmt::format("<tr><td>{}</td><td>{}{}</td><td><code>{}</code></td><td>{}</td></tr>\n", name,
                     bytes(s.value("size", json())),
                     s.contains("cut") && s["cut"] == true ? " (only its end read)" : "",
                     field(s, "sha256"), shown_tail);
}

// The view as a tree of job paths: each node a path component, an entry where the view binds.
struct Node {
  const json* entry = nullptr;
  std::map<std::string, std::unique_ptr<Node>> children;
  size_t entries = 0;  // in this subtree
};

std::string entry_text(const json& e) {
  std::string out = "<code>" + field(e, "kind") + "</code>";
  if (e.contains("writable") && e["writable"] == true)
    out += " <span class=\"badge note\">writable</span>";
  std::string pin = member_text(e, "pin");
  if (!pin.empty() && pin != "null") out += " pin <code>" + html::text_cut(pin, 160) + "</code>";
  std::string host = member_text(e, "host_path");
  if (!host.empty() && host != "null")
    out += " from <code>" + html::text_cut(host, 512) + "</code>";
  return out;
}

std::string render(const std::string& name, const Node& n, size_t depth) {
  std::string label = "<code>" + html::text_cut(name, kMaxTextBytes) + "</code>";
  if (n.entry) label += " " + entry_text(*n.entry);
  if (n.children.empty()) return "<li>" + label + "</li>\n";
  std::string inner;
  for (const auto& [child, node] : n.children) inner += render(child, *node, depth + 1);
  return fmt::format(
      "<li><details{}><summary>{} <span class=\"muted\">({} below)</span></summary>"
      "<ul class=\"tree\">\n{}</ul></details></li>\n",
      depth < 1 ? " open" : "", label, n.entries - (n.entry ? 1 : 0), inner);
}

}  // namespace

std::string command_section(const json& r) {
  const json& a = r.contains("admission") ? r["admission"] : json();
  std::string out;
  if (a.is_object() && a.contains("command") && a["command"].is_object()) {
    const json& c = a["command"];
    out += "<p>argv (each element as given):</p><ol>\n";
    size_t shown = 0;
    for (const auto& arg : member_list(c, "argv")) {
      if (shown++ == kMaxRows) break;
      out += "<li><code>" +
             html::text_cut(arg.is_string() ? arg.get<std::string>() : receipt::json_text(arg),
                            kMaxTextBytes) +
             "</code></li>\n";
    }
    out += fmt::format("</ol>\n<p>in <code>{}</code>, SOURCE_DATE_EPOCH {}</p>\n", field(c, "cwd"),
                       field(a, "source_date_epoch"));
  } else {
    out += "<p class=\"muted\">No admission was read (the run was refused first).</p>\n";
  }
  const json& env = a.is_object() && a.contains("env") ? a["env"] : json();
  if (env.is_object()) {
    std::string rows;
    size_t shown = 0;
    for (auto it = env.begin(); it != env.end() && shown < kMaxRows; ++it, ++shown)
      rows += fmt::format("<tr><td><code>{}</code></td><td><code>{}</code></td></tr>\n",
                          html::text_cut(it.key(), 512),
                          html::text_cut(it.value().is_string() ? it.value().get<std::string>()
                                                                : receipt::json_text(it.value()),
                                         kMaxTextBytes));
    rows += more_row(shown, env.size(), 2);
    out += details(env.size(), fmt::format("environment: {} variable(s), nothing else", env.size()),
                   "<table><tr><th>name</th><th>value</th></tr>\n" + rows + "</table>\n");
  }
  for (const auto& c : member_list(r, "commands")) {
    out += fmt::format(
        "<h3>command <code>{}</code>: exit {} signal {}{}</h3>\n<p class=\"muted\">{} → {}</p>\n",
        field(c, "label"), field(c, "exit"), field(c, "signal"),
        c.contains("timed_out") && c["timed_out"] == true ? " (timed out)" : "",
        field(c, "started"), field(c, "finished"));
    out += "<table><tr><th>stream</th><th>size</th><th>sha256</th><th></th></tr>\n" +
           stream_row(c, "stdout") + stream_row(c, "stderr") + "</table>\n";
  }
  return section("command", "What ran", out);
}

std::string inputs_section(const json& r) {
  const json& a = r.contains("admission") ? r["admission"] : json();
  auto inputs = member_list(a, "inputs");
  if (inputs.empty()) return "";
  std::map<std::string, size_t> kinds;
  std::string rows;
  size_t shown = 0;
  for (const auto& in : inputs) {
    const json& ann = in.is_object() && in.contains("annotations") ? in["annotations"] : json();
    std::string kind = member_text(ann, "kind");
    ++kinds[kind];
    if (shown == kMaxRows) continue;
    ++shown;
    rows += fmt::format(
        "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td>"
        "</tr>\n",
        field(in, "name"), html::text(kind), html::text_cut(receipt::input_digest(in), 256),
        field(in, "uri"));
  }
  rows += more_row(shown, inputs.size(), 4);
  std::string summary;
  for (const auto& [kind, n] : kinds)
    summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, html::text(kind));
  return section(
      "inputs", "Inputs",
      details(inputs.size(), fmt::format("{} input(s): {}", inputs.size(), summary),
              "<table><tr><th>name</th><th>kind</th><th>digest</th><th>where</th></tr>\n" + rows +
                  "</table>\n"));
}

std::string view_section(const json& r) {
  auto view = member_list(r, "view");
  if (view.empty()) return "";
  Node root;
  size_t shown = 0;
  for (const auto& e : view) {
    if (shown == kMaxRows) break;
    ++shown;
    std::string path = member_text(e, "job_path");
    Node* n = &root;
    ++n->entries;
    size_t depth = 0, pos = 0;
    while (pos < path.size()) {
      size_t slash = path.find('/', pos);
      if (slash == pos) {
        ++pos;
        continue;
      }
      // Past kMaxViewDepth the rest of the path is one name.
      size_t end = depth + 1 >= kMaxViewDepth || slash == std::string::npos ? path.size() : slash;
      auto& child = n->children[path.substr(pos, end - pos)];
      if (!child) child = std::make_unique<Node>();
      n = child.get();
      ++n->entries;
      ++depth;
      pos = end + 1;
    }
    n->entry = &e;
  }
  std::string kinds;
  for (const auto& [kind, n] : receipt::view_kinds(r))
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, html::text(kind));
  std::string tree = "<ul class=\"tree\">\n" + render("/", root, 0) + "</ul>\n";
  if (shown < view.size())
    tree += fmt::format("<p class=\"muted\">… {} more in the receipt</p>\n", view.size() - shown);
  return section("view", "The job's view",
                 fmt::format("<p>{} entries: {}</p>\n{}", view.size(), kinds, tree));
}

std::string outputs_section(const json& r) {
  auto outputs = member_list(r, "outputs");
  std::string out =
      fmt::format("<p>{} output(s), {} in regular files; the list's sha256 <code>{}</code></p>\n",
                  field(r, "outputs_total"), bytes(r.value("outputs_bytes", json())),
                  field(r, "outputs_list_sha256"));
  std::string rows;
  size_t shown = 0;
  for (const auto& o : outputs) {
    if (shown == kMaxRows || !o.is_object()) break;
    ++shown;
    std::string kind = member_text(o, "kind");
    std::string what =
        kind == "symlink" ? "→ <code>" + shown_name(o, "target") + "</code>"
        : !kind.empty()
            ? html::text(kind) + " " + field(o, "device")
            : "<code>" + field(o, "sha256") + "</code>" +
                  (o.contains("hardlink_of")
                       ? " (hard link of <code>" + shown_name(o, "hardlink_of") + "</code>)"
                       : "");
    rows += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
                        shown_name(o, "path"), kind.empty() ? bytes(o.value("size", json())) : "",
                        what);
  }
  size_t total = r.contains("outputs_total") && r["outputs_total"].is_number_unsigned()
                     ? r["outputs_total"].get<size_t>()
                     : outputs.size();
  rows += more_row(shown, std::max(total, outputs.size()), 3);
  out += details(outputs.size(), fmt::format("{} listed", outputs.size()),
                 "<table><tr><th>path</th><th>size</th><th>sha256 or what it is</th></tr>\n" +
                     rows + "</table>\n");
  return section("outputs", "Outputs", out);
}

}  // namespace sealrun::report::parts
