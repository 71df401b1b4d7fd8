// The receipt → in-toto Statement / SLSA provenance v1 export: see provenance.h and
// docs/build-type.md (which documents every field written here).
#include "attest/provenance.h"

#include <fmt/format.h>

#include <set>

#include "attest/base64.h"
#include "attest/dsse.h"
#include "attest/inputs.h"
#include "attest/openssl_util.h"
#include "core/hex.h"
#include "core/run_id.h"
#include "core/strict_json.h"

namespace sealrun::attest {
namespace {

using nlohmann::json;

constexpr char kReceiptSchema[] = "sealrun-receipt-v1";

// Typed access to a receipt member with an error that names it ("receipt.admission.env").
Result<const json*> member(const json& obj, const char* key, const std::string& where,
                           json::value_t want, const char* want_name) {
  auto it = obj.find(key);
  std::string at = where + "." + key;
  if (it == obj.end()) return Error::make(fmt::format("{}: missing", at));
  bool ok =
      it->type() == want || (want == json::value_t::number_integer && it->is_number_integer());
  if (!ok)
    return Error::make(fmt::format("{}: expected {}, got {}", at, want_name, it->type_name()));
  return &*it;
}
Result<std::string> string_at(const json& obj, const char* key, const std::string& where) {
  auto* v = SEALRUN_TRY(member(obj, key, where, json::value_t::string, "a string"));
  return v->get<std::string>();
}
// A string member that may be absent ("" then); any other type is an error naming it. (nlohmann's
// value() would throw on a wrong type, and no exception may leave the module.)
Result<std::string> optional_string(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string())
    return Error::make(
        fmt::format("{}.{}: expected a string, got {}", where, key, it->type_name()));
  return it->get<std::string>();
}
Result<const json*> object_at(const json& obj, const char* key, const std::string& where) {
  return member(obj, key, where, json::value_t::object, "an object");
}
Result<const json*> array_at(const json& obj, const char* key, const std::string& where) {
  return member(obj, key, where, json::value_t::array, "an array");
}

Status each_is(const json& container, bool (json::*test)() const noexcept, const std::string& where,
               const char* want) {
  for (const auto& [key, value] : container.items())
    if (!(value.*test)()) return Error::make(fmt::format("{}.{}: expected {}", where, key, want));
  return ok_status();
}

// RFC 3339 in UTC, as in-toto's Timestamp requires: "YYYY-MM-DDTHH:MM:SS[.fraction]Z".
bool is_utc_timestamp(std::string_view s) {
  if (s.size() < 20 || s.size() > 40 || s.back() != 'Z') return false;
  const char* shape = "dddd-dd-ddTdd:dd:dd";
  for (size_t i = 0; i < 19; ++i) {
    bool digit = s[i] >= '0' && s[i] <= '9';
    if (shape[i] == 'd' ? !digit : s[i] != shape[i]) return false;
  }
  std::string_view rest = s.substr(19, s.size() - 20);
  if (rest.empty()) return true;
  if (rest[0] != '.' || rest.size() < 2) return false;
  for (char c : rest.substr(1))
    if (c < '0' || c > '9') return false;
  return true;
}

Result<json> external_parameters(const json& receipt) {
  const std::string where = "receipt.admission";
  const json& adm = *SEALRUN_TRY(object_at(receipt, "admission", "receipt"));
  auto sha = SEALRUN_TRY(string_at(adm, "sha256", where));
  if (!is_sha256_hex(sha)) return Error::make(where + ".sha256: not 64 lower-case hex digits");
  if (SEALRUN_TRY(optional_string(receipt, "admission_sha256", "receipt")) != sha)
    return Error::make(where + ".sha256: differs from receipt.admission_sha256");
  const json& command = *SEALRUN_TRY(object_at(adm, "command", where));
  const json& argv = *SEALRUN_TRY(array_at(command, "argv", where + ".command"));
  SEALRUN_TRY(each_is(argv, &json::is_string, where + ".command.argv", "a string"));
  auto cwd = SEALRUN_TRY(string_at(command, "cwd", where + ".command"));
  const json& env = *SEALRUN_TRY(object_at(adm, "env", where));
  SEALRUN_TRY(each_is(env, &json::is_string, where + ".env", "a string"));
  const json& epoch = *SEALRUN_TRY(
      member(adm, "source_date_epoch", where, json::value_t::number_integer, "an integer"));
  const json& limits = *SEALRUN_TRY(object_at(adm, "limits", where));
  SEALRUN_TRY(each_is(limits, &json::is_number_integer, where + ".limits", "an integer"));
  const json& containment = *SEALRUN_TRY(object_at(adm, "containment", where));
  const json& required = *SEALRUN_TRY(array_at(containment, "required", where + ".containment"));
  SEALRUN_TRY(each_is(required, &json::is_string, where + ".containment.required", "a string"));
  auto mechanism = SEALRUN_TRY(string_at(containment, "mechanism", where + ".containment"));
  auto network = SEALRUN_TRY(string_at(containment, "network", where + ".containment"));
  // Mirrors the admission's own spelling, so a verifier can compare field by field with the
  // admission document whose SHA-256 is admission_sha256.
  return json{
      {"admission_sha256", sha},
      {"command", {{"argv", argv}, {"cwd", cwd}}},
      {"env", env},
      {"source_date_epoch", epoch},
      {"limits", limits},
      {"containment", {{"required", required}, {"mechanism", mechanism}, {"network", network}}}};
}

Result<json> resolved_dependencies(const json& receipt) {
  const json& adm = receipt.at("admission");
  const json& inputs = *SEALRUN_TRY(array_at(adm, "inputs", "receipt.admission"));
  for (size_t i = 0; i < inputs.size(); ++i)
    SEALRUN_TRY(check_input_descriptor(inputs[i], fmt::format("receipt.admission.inputs[{}]", i)));
  return inputs;
}

// One subject per output file; a symlink, FIFO or device has no digest to name. A run that left no
// output file (most failed runs, and a run whose job only checks something) is still exportable:
// its Statement is about the receipt itself (docs/build-type.md, "Subjects").
Result<json> subjects(const json& receipt, const std::string& receipt_sha256) {
  const json& outputs = *SEALRUN_TRY(array_at(receipt, "outputs", "receipt"));
  json out = json::array();
  std::set<std::string> names;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string where = fmt::format("receipt.outputs[{}]", i);
    if (!outputs[i].is_object()) return Error::make(where + ": expected an object");
    if (outputs[i].contains("kind")) continue;
    auto path = SEALRUN_TRY(string_at(outputs[i], "path", where));
    auto sha = SEALRUN_TRY(string_at(outputs[i], "sha256", where));
    if (path.empty()) return Error::make(where + ".path: empty");
    if (!is_sha256_hex(sha)) return Error::make(where + ".sha256: not 64 lower-case hex digits");
    if (!names.insert(path).second)
      return Error::make(
          fmt::format("{}.path: \"{}\" is listed twice", where, printable_text(path, 200)));
    json subject = {{"name", path}, {"digest", {{"sha256", sha}}}};
    // A name that is not valid UTF-8 is carried losslessly beside its display form.
    if (outputs[i].contains("path_b64")) {
      auto b64 = SEALRUN_TRY(string_at(outputs[i], "path_b64", where));
      SEALRUN_TRY(base64_decode(b64, 64 * 1024, where + ".path_b64"));
      subject["annotations"] = {{"path_b64", b64}};
    }
    out.push_back(std::move(subject));
  }
  if (out.empty())
    out.push_back({{"name", "receipt.json"}, {"digest", {{"sha256", receipt_sha256}}}});
  return out;
}

Result<json> internal_parameters(const json& receipt, const std::string& state) {
  json internal = json::object();
  auto grant = receipt.find("grant");
  if (grant != receipt.end() && grant->is_object()) {
    json g = json::object();
    for (const char* key : {"mechanism", "mode"})
      g[key] = SEALRUN_TRY(string_at(*grant, key, "receipt.grant"));
    for (const char* key : {"enforced", "degraded", "unenforced_required"}) {
      const json& list = *SEALRUN_TRY(array_at(*grant, key, "receipt.grant"));
      SEALRUN_TRY(each_is(list, &json::is_string, std::string("receipt.grant.") + key, "a string"));
      g[key] = list;
    }
    internal["grant"] = std::move(g);
  }
  auto exit = receipt.find("exit");
  internal["outcome"] = {
      {"state", state},
      {"exit", exit != receipt.end() && exit->is_number_integer() ? *exit : json(nullptr)},
      {"reason", SEALRUN_TRY(optional_string(receipt, "reason", "receipt"))}};
  size_t listed = receipt.at("outputs").size();
  json outputs = {{"listed", listed}, {"total", listed}};
  auto total = receipt.find("outputs_total");
  if (total != receipt.end() && total->is_number_integer() && total->get<int64_t>() >= 0) {
    outputs["total"] = total->get<uint64_t>();
    outputs["list_sha256"] =
        SEALRUN_TRY(optional_string(receipt, "outputs_list_sha256", "receipt"));
  }
  internal["outputs"] = std::move(outputs);
  return internal;
}

json byproducts(const json& receipt, const std::string& receipt_sha256) {
  json out = json::array();
  out.push_back({{"name", "receipt.json"},
                 {"digest", {{"sha256", receipt_sha256}}},
                 {"mediaType", kReceiptPayloadType}});
  auto commands = receipt.find("commands");
  if (commands == receipt.end() || !commands->is_array()) return out;
  for (const auto& c : *commands) {
    if (!c.is_object()) continue;
    auto label_it = c.find("label");
    std::string label = label_it != c.end() && label_it->is_string() ? label_it->get<std::string>()
                                                                     : std::string("command");
    for (const char* stream : {"stdout", "stderr"}) {
      auto s = c.find(stream);
      if (s == c.end() || !s->is_object()) continue;
      auto sha_it = s->find("sha256");
      if (sha_it == s->end() || !sha_it->is_string()) continue;
      const std::string& sha = sha_it->get_ref<const std::string&>();
      if (!is_sha256_hex(sha)) continue;
      out.push_back({{"name", fmt::format("{}.{}", label, stream)}, {"digest", {{"sha256", sha}}}});
    }
  }
  return out;
}

}  // namespace

namespace {

Result<json> build_statement(const json& receipt, const std::string& receipt_sha256,
                             const ExportOptions& options) {
  if (!receipt.is_object()) return Error::make("receipt: not a JSON object");
  auto schema = SEALRUN_TRY(string_at(receipt, "schema", "receipt"));
  if (schema != kReceiptSchema)
    return Error::make(fmt::format("receipt.schema: \"{}\", expected \"{}\"",
                                   printable_text(schema, 60), kReceiptSchema));
  auto id = SEALRUN_TRY(string_at(receipt, "id", "receipt"));
  if (!is_valid_run_id(id))
    return Error::make(fmt::format("receipt.id: not a run id ({})", kRunIdRule));
  auto state = SEALRUN_TRY(string_at(receipt, "state", "receipt"));
  if (state != "built" && state != "failed" && state != "not_run")
    return Error::make(fmt::format("receipt.state: \"{}\" is not built, failed or not_run",
                                   printable_text(state, 40)));
  if (state != "built" && !options.include_failed)
    return Error::make(fmt::format(
        "the receipt's state is {} (exit {}): only a built receipt exports as provenance; "
        "--include-failed exports it with the state recorded",
        state, receipt.contains("exit") ? receipt["exit"].dump() : "unknown"));
  if (!is_sha256_hex(receipt_sha256)) return Error::make("receipt_sha256: not 64 hex digits");
  if (!receipt.contains("admission"))
    return Error::make(
        "receipt.admission: missing (a receipt written before sealrun 0.2.0 does not record its "
        "admission, and provenance without it would not say what was built)");
  const json& version = *SEALRUN_TRY(object_at(receipt, "sealrun_version", "receipt"));
  auto sealrun_version = SEALRUN_TRY(string_at(version, "version", "receipt.sealrun_version"));
  auto commit = SEALRUN_TRY(string_at(version, "commit", "receipt.sealrun_version"));

  auto external = SEALRUN_TRY(external_parameters(receipt));
  auto deps = SEALRUN_TRY(resolved_dependencies(receipt));
  auto subject = SEALRUN_TRY(subjects(receipt, receipt_sha256));
  auto internal = SEALRUN_TRY(internal_parameters(receipt, state));

  std::string mode = internal.contains("grant") ? internal["grant"]["mode"].get<std::string>() : "";
  const char* builder_id = state != "built"      ? kBuilderUnsuccessful
                           : mode == "enforcing" ? kBuilderEnforcing
                                                 : kBuilderReportOnly;
  json metadata = {{"invocationId", id}};
  for (auto [from, to] : {std::pair{"started", "startedOn"}, {"finished", "finishedOn"}}) {
    auto t = SEALRUN_TRY(optional_string(receipt, from, "receipt"));
    if (t.empty()) continue;
    if (!is_utc_timestamp(t))
      return Error::make(fmt::format("receipt.{}: \"{}\" is not an RFC 3339 UTC time", from,
                                     printable_text(t, 60)));
    metadata[to] = t;
  }
  return json{
      {"_type", kStatementType},
      {"subject", std::move(subject)},
      {"predicateType", kSlsaProvenanceV1},
      {"predicate",
       {{"buildDefinition",
         {{"buildType", kBuildTypeUri},
          {"externalParameters", std::move(external)},
          {"internalParameters", std::move(internal)},
          {"resolvedDependencies", std::move(deps)}}},
        {"runDetails",
         {{"builder",
           {{"id", builder_id}, {"version", {{"sealrun", sealrun_version + "+" + commit}}}}},
          {"metadata", std::move(metadata)},
          {"byproducts", byproducts(receipt, receipt_sha256)}}}}},
  };
}

}  // namespace

Result<json> receipt_to_statement(const json& receipt, const std::string& receipt_sha256,
                                  const ExportOptions& options) {
  // Every access above checks types first; this is the module's exception boundary all the same,
  // so a receipt shape nobody foresaw becomes an error, never an escaping exception.
  try {
    return build_statement(receipt, receipt_sha256, options);
  } catch (const json::exception& e) {
    return Error::make(fmt::format("receipt: unexpected shape ({})", e.what()));
  }
}

namespace {

Result<json> statement_of(std::string_view receipt_bytes, const ExportOptions& options) {
  // The receipt's own bounds (docs/contract.md: at most 1 MiB, depth within core's default).
  if (receipt_bytes.size() > 1024 * 1024)
    return Error::make(
        fmt::format("the receipt is {} bytes; a receipt is at most 1 MiB", receipt_bytes.size()));
  auto receipt = parse_strict_json(receipt_bytes);
  if (!receipt) return std::move(receipt).error().context("receipt");
  return receipt_to_statement(*receipt, sha256_hex_of(receipt_bytes), options);
}

// nlohmann throws on a string that is not UTF-8; a receipt built in memory (not parsed) could hold
// one, and no exception may leave the module.
Result<std::string> dump(const json& doc, int indent) {
  try {
    return doc.dump(indent);
  } catch (const json::exception& e) {
    return Error::make(fmt::format("the statement cannot be written as JSON: {}", e.what()));
  }
}

}  // namespace

Result<std::string> export_statement(std::string_view receipt_bytes, const ExportOptions& options) {
  auto statement = SEALRUN_TRY(statement_of(receipt_bytes, options));
  return SEALRUN_TRY(dump(statement, 2)) + "\n";
}

Result<std::string> export_signed_statement(std::string_view receipt_bytes,
                                            const ExportOptions& options, const SigningKey& key) {
  auto statement = SEALRUN_TRY(statement_of(receipt_bytes, options));
  return sign_envelope(key, kInTotoPayloadType, SEALRUN_TRY(dump(statement, -1)));
}

}  // namespace sealrun::attest
