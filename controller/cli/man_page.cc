// SPDX-License-Identifier: Apache-2.0
// Renders sealrun(1) from the CLI model (controller/cli/man_page.h). The sections after COMMANDS
// (exit status, environment, files) are the parts of the contract that the parser does not know.
#include "controller/cli/man_page.h"

#include <fmt/format.h>

#include <string_view>

#include "core/exit_codes.h"

namespace sealrun::cli {
namespace {

// One roff line per line of `text`, each escaped; blank lines become paragraph breaks.
std::string paragraph(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    if (line.empty())
      out += ".PP\n";
    else
      out += roff_escape(line) + "\n.br\n";
    start = nl + 1;
  }
  return out;
}

// "[--json]", "--out FILE", "ADMISSION", "[ARGV...]" for a synopsis.
std::string synopsis_item(const CliOption& o) {
  std::string item;
  if (!o.names.empty()) {
    item = "\\fB" + roff_escape(o.names.back()) + "\\fR";
    if (o.takes_value) item += " \\fI" + roff_escape(o.metavar) + "\\fR";
  } else {
    item = "\\fI" + roff_escape(o.metavar) + "\\fR";
  }
  if (o.repeatable) item += "...";
  return o.required ? item : "[" + item + "]";
}

std::string option_entry(const CliOption& o) {
  std::string head;
  if (o.names.empty()) {
    head = "\\fI" + roff_escape(o.metavar) + "\\fR";
  } else {
    std::vector<std::string> names;
    for (const auto& n : o.names) names.push_back("\\fB" + roff_escape(n) + "\\fR");
    head = join_words(names, ", ");
    if (o.takes_value) head += " \\fI" + roff_escape(o.metavar) + "\\fR";
  }
  std::vector<std::string> notes;
  if (o.required) notes.emplace_back("required");
  if (o.repeatable) notes.emplace_back("repeatable");
  if (!o.choices.empty())
    notes.push_back((o.choice_list ? "comma-separated, of: " : "one of: ") +
                    join_words(o.choices, ", "));
  if (!o.default_value.empty()) notes.push_back("default: " + o.default_value);
  std::string body = o.description;
  if (!notes.empty()) body += (body.empty() ? "(" : " (") + join_words(notes, "; ") + ")";
  return ".TP\n" + head + "\n" + roff_escape(body) + "\n";
}

void render_command(const CliCommand& cmd, std::string* out) {
  if (!cmd.path.empty()) {
    std::string items;
    for (const auto& o : cmd.options)
      if (o.required) items += " " + synopsis_item(o);
    if (!cmd.options.empty()) items += " [\\fIOPTIONS\\fR]";
    for (const auto& p : cmd.positionals) items += " " + synopsis_item(p);
    if (!cmd.subcommands.empty()) items += " \\fICOMMAND\\fR";
    *out += fmt::format(".SS \"{}\"\n", "sealrun " + join_words(cmd.path, " "));
    *out += "\\fBsealrun " + roff_escape(join_words(cmd.path, " ")) + "\\fR" + items + "\n.PP\n";
    *out += paragraph(cmd.description);
    for (const auto& o : cmd.options) *out += option_entry(o);
    for (const auto& p : cmd.positionals) *out += option_entry(p);
    if (!cmd.footer.empty()) *out += ".PP\n" + paragraph(cmd.footer);
  }
  for (const auto& sub : cmd.subcommands) render_command(sub, out);
}

}  // namespace

std::string roff_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  // A line starting with '.' or '\'' would be read as a request.
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  for (size_t i = out.find('\n'); i != std::string::npos; i = out.find('\n', i + 1))
    if (i + 1 < out.size() && (out[i + 1] == '.' || out[i + 1] == '\'')) out.insert(i + 1, "\\&");
  return out;
}

std::string render_man_page(const CliCommand& root, const std::string& version) {
  std::string summary = root.description;
  if (summary.rfind("sealrun: ", 0) == 0) summary.erase(0, 9);
  std::string out;
  out += ".\\\" Generated from sealrun's command-line definitions by `sealrun __generate man`.\n";
  out += fmt::format(".TH SEALRUN 1 \"\" \"{}\" \"User Commands\"\n", roff_escape(version));
  out += ".SH NAME\nsealrun \\- " + roff_escape(summary) + "\n";
  out += ".SH SYNOPSIS\n.B sealrun\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]\n.br\n";
  out += ".B sealrun\n\\fB\\-\\-version\\fR | \\fB\\-\\-help\\fR\n";
  out += ".SH DESCRIPTION\n";
  out += paragraph(
      "sealrun verifies the SHA-256 pins of a job's source, toolchain and container image, runs "
      "the job contained (bubblewrap or rootless podman) in a memory-limited resource group while "
      "a census watches disk growth, and always writes a bounded, digested receipt of what ran, "
      "how it was stopped and what was cleaned up.");
  out +=
      ".PP\nEvery command accepts \\fB\\-\\-help\\fR. Commands that print data accept "
      "\\fB\\-\\-json\\fR. Errors go to standard error and name the offending input.\n";
  out += ".PP\nGlobal options:\n";
  for (const auto& o : root.options) out += option_entry(o);
  out += ".SH COMMANDS\n";
  render_command(root, &out);
  out += ".SH \"EXIT STATUS\"\n";
  out += paragraph("sealrun run (the most serious applicable code wins: 7 over 6 over 5):");
  struct Code {
    int code;
    const char* meaning;
  };
  for (const Code& c :
       {Code{kExitOk, "the receipt says built"}, Code{kExitUsage, "usage error"},
        Code{kExitAdmissionRefused, "admission refused, nothing executed"},
        Code{kExitContainmentUnavailable,
             "containment unavailable for a required dimension, nothing executed"},
        Code{kExitJobFailed, "the job failed (non-zero exit, signal, timeout, OOM)"},
        Code{kExitGuardTripped, "a growth guard tripped and the job was stopped"},
        Code{kExitStopUnconfirmed, "stop or cleanup could not be confirmed"}})
    out += fmt::format(".TP\n.B {}\n{}\n", c.code, roff_escape(c.meaning));
  out += ".PP\n" + paragraph(fmt::format(
                       "Other commands exit {} on success, {} on failure (the message is on "
                       "standard error) and {} on a usage error.",
                       static_cast<int>(kExitOk), static_cast<int>(kExitFailure),
                       static_cast<int>(kExitUsage)));
  out += ".SH ENVIRONMENT\n.TP\n.B SEALRUN_JOB_USER\n";
  out += roff_escape(
             "The unprivileged user that rootless bubblewrap and podman jobs run as when sealrun "
             "runs as root (default: sealrun).") +
         "\n";
  out += ".SH FILES\n.TP\n.I STATE/results/ID/receipt.json\n";
  out += roff_escape("The receipt of run ID; STATE is --state-dir (default ./sealrun-state).") +
         "\n.TP\n.I STATE/owned/ID/\n" +
         roff_escape("The run's owned space (its scratch), sized and watched by the census.") +
         "\n";
  out += ".SH \"SEE ALSO\"\n.BR bwrap (1),\n.BR podman-run (1),\n.BR systemd-run (1)\n";
  return out;
}

}  // namespace sealrun::cli
