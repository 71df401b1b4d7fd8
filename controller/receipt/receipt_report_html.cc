// SPDX-License-Identifier: Apache-2.0
// The receipt page and the ledger index: see receipt_report_html.h. This file holds the frame and
// the sections about the verdict, the checks, containment, the timeline, the signature and the
// cleanup; receipt_report_sections.cc the command, inputs, view and outputs.
#include "controller/receipt/receipt_report_html.h"

#include <fmt/format.h>

#include <map>

#include "controller/receipt/html_text.h"
#include "controller/receipt/receipt_facts.h"
#include "controller/receipt/receipt_report_parts.h"
#include "controller/receipt/svg_timeline.h"
#include "fingerprint/hash_progress.h"

namespace sealrun::report {

using nlohmann::json;
using receipt::member_list;
using receipt::member_text;

namespace parts {

namespace {

constexpr char kStyle[] = R"(
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f8fa;color:#1f2328}
main{max-width:1120px;margin:0 auto;padding:8px 24px 40px}
h1{font-size:22px;margin:0 0 6px}
h2{font-size:17px;margin:0 0 10px}
section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:14px 18px;margin:14px 0}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{font-weight:600;background:#f6f8fa}
tr.failed td{background:#fff5f5}
code,pre,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12.5px;word-break:break-all}
pre{background:#f6f8fa;padding:8px;margin:4px 0;white-space:pre-wrap}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-weight:600;font-size:12px}
.pass{background:#dafbe1;color:#116329}.fail{background:#ffebe9;color:#a40e26}
.note{background:#eaeef2;color:#3d444d}
.big{font-size:16px;padding:3px 14px}
details>summary{cursor:pointer;margin:2px 0}
ul.tree{list-style:none;padding-left:18px;margin:2px 0}
.muted{color:#57606a}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 18px;margin:0}
dl.facts dt{color:#57606a}
dl.facts dd{margin:0}
.plot{max-width:100%;height:auto;display:block;margin:6px 0}
.plot .grid{stroke:#eaeef2}.plot .frame{fill:none;stroke:#8c959f}
.plot .limit{stroke:#cf222e;stroke-dasharray:6 4}
.plot text{font:11px system-ui,sans-serif;fill:#57606a}
.plot .plot-title{font-weight:600;font-size:13px;fill:#1f2328}
.plot .legend{fill:#1f2328}
footer{color:#57606a;font-size:12px;margin-top:18px}
)";

}  // namespace

std::string field(const json& doc, const char* key) {
  return html::text_cut(member_text(doc, key), kMaxTextBytes);
}

std::string bytes(const json& v) {
  std::string exact = v.is_number_integer() ? fmt::format("{} bytes", receipt::json_text(v)) : "";
  std::string shown = html::entities(receipt::bytes_text(v));
  return exact.empty() ? shown : fmt::format("<span title=\"{}\">{}</span>", exact, shown);
}

std::string badge(std::string_view result) {
  std::string_view cls = result == "pass" || result == "built" || result == "ok" ? "pass"
                         : result == "note" || result == "not_run"               ? "note"
                                                                                 : "fail";
  return fmt::format("<span class=\"badge {}\">{}</span>", cls, html::text(result));
}

std::string section(std::string_view id, std::string_view title, const std::string& body) {
  return fmt::format("<section id=\"{}\"><h2>{}</h2>\n{}</section>\n", id, html::entities(title),
                     body);
}

std::string more_row(size_t shown, size_t total, int columns) {
  if (shown >= total) return "";
  return fmt::format("<tr><td colspan=\"{}\" class=\"muted\">… {} more in the receipt</td></tr>\n",
                     columns, total - shown);
}

std::string document(std::string_view title_html, const std::string& body) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<main>\n{}</main>\n</body>\n</"
      "html>\n",
      title_html, kStyle, body);
}

}  // namespace parts

namespace {

using parts::badge;
using parts::field;

std::string fact(std::string_view name, const std::string& value) {
  return fmt::format("<dt>{}</dt><dd>{}</dd>\n", html::entities(name), value);
}

const PageCheck* find_check(const ReceiptPage& page, std::string_view name) {
  for (const auto& c : page.checks)
    if (c.check == name) return &c;
  return nullptr;
}

std::string verdict_section(const json& r, const ReceiptPage& page) {
  std::string state = member_text(r, "state");
  std::string out = fmt::format("<h1>Receipt <code>{}</code> {}</h1>\n<p class=\"big\">{}</p>\n",
                                field(r, "id"), badge(state), field(r, "reason"));
  out += "<dl class=\"facts\">\n";
  out += fact("exit", field(r, "exit"));
  out += fact("ran", field(r, "started") + " → " + field(r, "finished"));
  out += fact("admission", "<code>sha256:" + field(r, "admission_sha256") + "</code>");
  if (const auto* c = find_check(page, "signature"))
    out += fact("signature", badge(c->result) + " " + html::text_cut(c->detail, kMaxTextBytes));
  const json& v = r.contains("sealrun_version") ? r["sealrun_version"] : json();
  if (v.is_object())
    out += fact("written by",
                fmt::format("sealrun {} (commit <code>{}</code>{})", field(v, "version"),
                            field(v, "commit"),
                            v.contains("dirty") && v["dirty"] == true ? ", dirty tree" : ""));
  const json& rb = r.contains("rebuild_of") ? r["rebuild_of"] : json();
  if (rb.is_object()) {
    std::string vary;
    for (const auto& x : member_list(rb, "variations"))
      vary += (vary.empty() ? "" : ", ") + field(x, "name");
    out += fact("rebuild of", fmt::format("run <code>{}</code> (receipt sha256:<code>{}</code>)"
                                          "{}",
                                          field(rb, "id"), field(rb, "receipt_sha256"),
                                          vary.empty() ? "" : "; varied: " + vary));
  }
  out += fact("read from", html::text_cut(page.source, kMaxTextBytes));
  out += "</dl>\n";
  return fmt::format("<section id=\"verdict\">\n{}</section>\n", out);
}

std::string checks_section(const ReceiptPage& page) {
  if (page.checks.empty()) return "";
  std::string out = "<table><tr><th>check</th><th>result</th><th>detail</th></tr>\n";
  for (const auto& c : page.checks)
    out += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       c.result == "FAIL" ? " class=\"failed\"" : "", html::text(c.check),
                       badge(c.result), html::text_cut(c.detail, kMaxTextBytes));
  return parts::section("checks", "The receipt itself (receipt verify)", out + "</table>\n");
}

std::string verifications_section(const json& r) {
  auto list = member_list(r, "verifications");
  size_t pass = 0;
  for (const auto& v : list) pass += member_text(v, "result") == "pass";
  std::string rows;
  size_t shown = 0;
  for (const auto& v : list) {
    if (shown == kMaxRows) break;
    ++shown;
    bool ok = member_text(v, "result") == "pass";
    rows += fmt::format(
        "<tr{}><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>\n",
        ok ? "" : " class=\"failed\"", field(v, "target"), field(v, "expected"),
        field(v, "observed"), badge(ok ? "pass" : "FAIL"));
  }
  rows += parts::more_row(shown, list.size(), 4);
  std::string table =
      "<table><tr><th>target</th><th>expected</th><th>observed</th><th>result</th>"
      "</tr>\n" +
      rows + "</table>\n";
  std::string summary = fmt::format("{} of {} passed", pass, list.size());
  bool open = pass != list.size() || list.size() <= 12;
  return parts::section("verifications", "Verifications",
                        fmt::format("<details{}><summary>{}</summary>\n{}</details>\n",
                                    open ? " open" : "", summary, table));
}

std::string limit_value(const std::string& name, const json& v) {
  return name.size() > 6 && name.compare(name.size() - 6, 6, "_bytes") == 0
             ? parts::bytes(v)
             : html::text(receipt::json_text(v));
}

std::string containment_section(const json& r) {
  std::string out;
  const json& g = r.contains("grant") ? r["grant"] : json();
  auto joined = [](const json& doc, const char* key) {
    std::string s;
    for (const auto& x : member_list(doc, key))
      s += (s.empty() ? "" : ", ") +
           html::text(x.is_string() ? x.get<std::string>() : receipt::json_text(x));
    return s.empty() ? std::string("none") : s;
  };
  if (g.is_object()) {
    out += "<dl class=\"facts\">\n";
    out += fact("mechanism", field(g, "mechanism") + " (" + field(g, "mode") + ")");
    out += fact("enforced", joined(g, "enforced"));
    out += fact("degraded", joined(g, "degraded"));
    out += fact("required, not enforced", joined(g, "unenforced_required"));
    out += "</dl>\n";
  } else {
    out += "<p class=\"muted\">No containment was granted (the run ended before).</p>\n";
  }
  auto hits = receipt::limits_hit(r);
  if (hits.empty()) {
    out += "<p>Limits reached: <span class=\"badge pass\">none</span></p>\n";
  } else {
    out += "<p>Limits reached:</p><ul>\n";
    for (const auto& h : hits)
      out += fmt::format("<li><span class=\"badge fail\">{}</span> {}</li>\n", html::text(h.name),
                         html::text_cut(h.detail, kMaxTextBytes));
    out += "</ul>\n";
  }
  // The admitted limits beside what the kernel reported back for each.
  const json& admission = r.contains("admission") ? r["admission"] : json();
  const json& limits =
      admission.is_object() && admission.contains("limits") ? admission["limits"] : json();
  const json& memory = r.contains("memory") ? r["memory"] : json();
  std::map<std::string, json> readback;
  for (const auto& l : member_list(memory, "limits"))
    if (l.is_object()) readback[member_text(l, "name")] = l;
  if (limits.is_object()) {
    out += "<table><tr><th>limit</th><th>admitted</th><th>observed</th><th>effective</th></tr>\n";
    size_t shown = 0;
    for (auto it = limits.begin(); it != limits.end() && shown < kMaxRows; ++it, ++shown) {
      std::string observed, effective;
      if (auto rb = readback.find(it.key()); rb != readback.end()) {
        observed = limit_value(it.key(), rb->second.value("observed", json())) +
                   (rb->second.contains("applied") && rb->second["applied"] == true
                        ? ""
                        : " <span class=\"badge "
                          "fail\">not applied</span>");
        effective = limit_value(it.key(), rb->second.value("effective", json()));
      }
      out +=
          fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                      html::text(it.key()), limit_value(it.key(), it.value()), observed, effective);
    }
    out += "</table>\n";
  }
  if (memory.is_object()) {
    const json& ev = memory.contains("events") ? memory["events"] : json();
    out += "<dl class=\"facts\">\n";
    out += fact("resource group", field(memory, "backend"));
    out += fact("memory peak", parts::bytes(memory.value("peak_bytes", json())));
    out += fact("swap used", parts::bytes(memory.value("swap_used_bytes", json())));
    out += fact("memory events",
                fmt::format("high {}, max {}, oom {}, oom_kill {}", field(ev, "high"),
                            field(ev, "max"), field(ev, "oom"), field(ev, "oom_kill")));
  } else {
    out += "<dl class=\"facts\">\n";
  }
  const json& owned = r.contains("owned_space") ? r["owned_space"] : json();
  if (owned.is_object())
    out += fact("owned space",
                fmt::format("{}, {}, {} inodes{}", field(owned, "kind"),
                            parts::bytes(owned.value("size_bytes", json())), field(owned, "inodes"),
                            owned.contains("why_not") ? " (" + field(owned, "why_not") + ")" : ""));
  out += fact("stop confirmed", field(r, "stop_confirmed"));
  out += "</dl>\n";
  return parts::section("containment", "Containment and limits", out);
}

std::string timeline_section(const json& r) {
  const json& admission = r.contains("admission") ? r["admission"] : json();
  const json& limits =
      admission.is_object() && admission.contains("limits") ? admission["limits"] : json();
  auto limit = [&](const char* name, std::vector<PlotLimit>& out) {
    if (limits.is_object() && limits.contains(name) && limits[name].is_number_unsigned() &&
        limits[name].get<uint64_t>() < (uint64_t{1} << 63))
      out.push_back({name, limits[name].get<uint64_t>()});
  };
  std::string out;
  auto samples = member_list(r, "samples");
  if (samples.empty())
    return parts::section("timeline", "Timeline",
                          "<p class=\"muted\">No census samples (no job was started).</p>\n");
  Plot memory{"Memory in use (the resource group)", {}, {}};
  memory.series.push_back({"memory in use", "#8250df", receipt::sample_series(r, "memory_bytes")});
  limit("memory_high_bytes", memory.limits);
  limit("memory_max_bytes", memory.limits);
  if (memory.series[0].points.empty()) {
    const json& m = r.contains("memory") ? r["memory"] : json();
    out += fmt::format(
        "<p class=\"muted\">This receipt has no memory samples (written before "
        "sealrun sampled memory, or the run had no resource group); its peak was "
        "{}.</p>\n",
        parts::bytes(m.is_object() ? m.value("peak_bytes", json()) : json()));
  } else {
    out += timeline_svg(memory);
  }
  Plot growth{"Owned space and results (allocated bytes)", {}, {}};
  growth.series.push_back({"owned space", "#1f6feb", receipt::sample_series(r, "owned_bytes")});
  growth.series.push_back({"results", "#1a7f37", receipt::sample_series(r, "result_bytes")});
  limit("owned_max_bytes", growth.limits);
  limit("result_max_bytes", growth.limits);
  out += timeline_svg(growth);
  out += fmt::format("<p class=\"muted\">{} sample(s) shown, {} more taken and thinned out.</p>\n",
                     samples.size(), field(r, "samples_dropped"));
  return parts::section("timeline", "Timeline", out);
}

std::string signature_section(const json& r, const ReceiptPage& page) {
  std::string out = "<dl class=\"facts\">\n";
  const json& s = r.contains("signing") ? r["signing"] : json();
  if (s.is_object()) {
    out += fact("signed by key", "<code>" + field(s, "key_id") + "</code>");
    out += fact("envelope", field(s, "envelope"));
  } else {
    out += fact("signed by key", "none: the receipt says it is unsigned");
  }
  if (const auto* c = find_check(page, "signature"))
    out += fact("verified", badge(c->result) + " " + html::text_cut(c->detail, kMaxTextBytes));
  out += "</dl>\n";
  return parts::section("signature", "Signature", out);
}

std::string strings_list(const json& r, const char* key, std::string_view title) {
  auto list = member_list(r, key);
  if (list.empty()) return "";
  std::string out = fmt::format("<h3>{}</h3><ul>\n", html::entities(title));
  size_t shown = 0;
  for (const auto& n : list) {
    if (shown++ == kMaxRows) break;
    out += "<li>" +
           html::text_cut(n.is_string() ? n.get<std::string>() : receipt::json_text(n),
                          kMaxTextBytes) +
           "</li>\n";
  }
  return out + "</ul>\n";
}

std::string cleanup_section(const json& r) {
  auto list = member_list(r, "cleanup");
  std::string out = "<table><tr><th>action</th><th>result</th><th>detail</th></tr>\n";
  size_t shown = 0;
  for (const auto& c : list) {
    if (shown == kMaxRows) break;
    ++shown;
    std::string result = member_text(c, "result");
    out += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       result == "ok" ? "" : " class=\"failed\"", field(c, "action"), badge(result),
                       field(c, "detail"));
  }
  out += parts::more_row(shown, list.size(), 3) + "</table>\n";
  out += strings_list(r, "not_finished", "Not finished");
  out += strings_list(r, "notes", "Notes");
  out += strings_list(r, "truncated", "Shortened to stay within the receipt's bound");
  return parts::section("cleanup", "Cleanup and notes", out);
}

}  // namespace

std::string receipt_page_html(const json& doc, const ReceiptPage& page) {
  static const json kEmpty = json::object();
  const json& r = doc.is_object() ? doc : kEmpty;  // a receipt is an object; anything else is empty
  std::string body;
  if (!page.index_href.empty())
    body += fmt::format("<p><a href=\"{}\">← every run of this ledger</a></p>\n",
                        html::entities(page.index_href));
  body += verdict_section(r, page);
  body += checks_section(page);
  body += verifications_section(r);
  body += containment_section(r);
  body += timeline_section(r);
  body += parts::command_section(r);
  body += parts::inputs_section(r);
  body += parts::view_section(r);
  body += parts::outputs_section(r);
  body += signature_section(r, page);
  body += cleanup_section(r);
  body += fmt::format(
      "<footer>Written by {} from the receipt above (digest sha256:<code>{}</code>). A static "
      "page: no script, nothing loaded from anywhere.</footer>\n",
      html::entities(page.generated_by),
      html::text_cut(r.contains("digest") ? member_text(r["digest"], "value") : "", 128));
  std::string title =
      fmt::format("sealrun receipt {} — {}", member_text(r, "id"), member_text(r, "state"));
  return parts::document(html::text(title), body);
}

std::string ledger_index_html(const LedgerIndex& index) {
  std::string rows;
  for (const auto& row : index.rows) {
    std::string id = "<code>" + html::text(row.id) + "</code>";
    if (!row.href.empty()) id = fmt::format("<a href=\"{}\">{}</a>", html::entities(row.href), id);
    rows += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{} {}</td>"
        "</tr>\n",
        row.seq, html::text(row.at), id, badge(row.state), html::text_cut(row.command, 512),
        row.signature.empty() ? "" : badge(row.signature), html::text_cut(row.signer, 256));
  }
  if (index.rows.empty())
    rows = "<tr><td colspan=\"6\" class=\"muted\">no runs recorded</td></tr>\n";
  std::string body = fmt::format(
      "<section id=\"ledger\"><h1>Runs recorded in <code>{}</code></h1>\n"
      "<p>The ledger's chain: {} {}</p>\n"
      "<table><tr><th>seq</th><th>time</th><th>run</th><th>state</th><th>command</th>"
      "<th>signer</th></tr>\n{}</table>\n</section>\n"
      "<footer>Written by {}. A static page: no script, nothing loaded from anywhere.</footer>\n",
      html::text(index.state_dir), badge(index.chain_ok ? "pass" : "FAIL"),
      html::text_cut(index.chain, kMaxTextBytes), rows, html::entities(index.generated_by));
  return parts::document(html::text("sealrun runs of " + index.state_dir), body);
}

}  // namespace sealrun::report
