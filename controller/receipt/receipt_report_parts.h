// SPDX-License-Identifier: Apache-2.0
// The pieces receipt_report_html.cc and receipt_report_sections.cc share: the page's frame and
// the small markup helpers. Internal to `receipt report`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sealrun::report::parts {

// A receipt member for the page: escaped and cut to kMaxTextBytes ("" when absent).
std::string field(const nlohmann::json& doc, const char* key);
// A byte count with the exact number as a tooltip: <span title="8589934592 bytes">8.0 GiB</span>.
std::string bytes(const nlohmann::json& v);
// <span class="badge pass|fail|note">text</span> for a result word ("pass", "FAIL", "built", ...).
std::string badge(std::string_view result);
// <section id=…><h2>title</h2> … </section>.
std::string section(std::string_view id, std::string_view title, const std::string& body);
// "… N more in the receipt" as a table row spanning `columns`, or "" when nothing was left out.
std::string more_row(size_t shown, size_t total, int columns);
// The document around `body`, with the inline style sheet; `title_html` is escaped already.
std::string document(std::string_view title_html, const std::string& body);

// The sections of receipt_report_sections.cc.
std::string command_section(const nlohmann::json& r);
std::string inputs_section(const nlohmann::json& r);
std::string view_section(const nlohmann::json& r);
std::string outputs_section(const nlohmann::json& r);

}  // namespace sealrun::report::parts
