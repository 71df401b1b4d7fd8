// SPDX-License-Identifier: Apache-2.0
// docs/receipt.schema.json against the receipts sealrun really writes: a built run (signed, with
// every kind of output the job can make), a failed run, a refused run, a growth guard's stop, a
// receipt shrunk to a 64 KiB bound by its outputs, and one rendered in the last resort (the
// verdict lists folded into counters). Each is validated with Debian's python3-jsonschema
// (Draft 2020-12), an implementation independent of ours. The schema is shown not to be vacuous
// (an extra or renamed top-level key, a wrong state, a bad owned_space all fail), and every field
// of the writer's table (controller/receipt/receipt_fields.h) must be in the schema, with the same
// JSON kinds and the same required-ness, and in docs/receipt.md's "Fields" section: a field added
// without its documentation fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "controller/receipt/receipt.h"
#include "controller/receipt/receipt_fields.h"
#include "core/process.h"
#include "tests/controller/run_test_support.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSchemaPath = std::string(SEALRUN_SOURCE_DIR) + "/docs/receipt.schema.json";
const std::string kDocPath = std::string(SEALRUN_SOURCE_DIR) + "/docs/receipt.md";

// Validates one JSON file: "valid" on stdout and exit 0, or one line per error and exit 3 (not 1,
// which is what Python exits with when it cannot run this at all). The schema itself is checked
// against the 2020-12 meta-schema first.
constexpr const char* kValidator = R"PY(
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1], encoding="utf-8"))
Draft202012Validator.check_schema(schema)
doc = json.load(open(sys.argv[2], encoding="utf-8"))
errors = sorted(Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
for e in errors[:20]:
    print("/" + "/".join(map(str, e.absolute_path)) + ": " + e.message[:400])
if not errors:
    print("valid")
sys.exit(3 if errors else 0)
)PY";

struct SchemaVerdict {
  bool valid = false;
  std::string errors;
};

SchemaVerdict validate_file(const std::string& path) {
  SpawnOptions o;
  o.argv = {"/usr/bin/python3", "-c", kValidator, kSchemaPath, path};
  auto r = run_capture(o, 60000);
  EXPECT_TRUE(r.ok()) << r.error().message();
  if (!r.ok()) return {};
  // Exit 0 or 3 is a verdict; anything else (no jsonschema, a broken schema) is a failure here.
  EXPECT_TRUE(r->status.code == 0 || r->status.code == 3)
      << "the validator could not run (apt-get install python3-jsonschema): " << r->out << r->err;
  return {r->status.code == 0 && r->out == "valid\n", r->out + r->err};
}

SchemaVerdict validate_json(const json& doc, const std::string& path) {
  write_text(path, doc.dump(2));
  return validate_file(path);
}

json read_json(const std::string& path) {
  auto doc = json::parse(read_text(path), nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << path;
  return doc;
}

class ReceiptSchemaTest : public RunTest {
 protected:
  // The receipt of run `id`, validated against the schema.
  json expect_valid_receipt(const std::string& id) {
    std::string path = receipt_path(id);
    EXPECT_TRUE(fs::exists(path)) << path;
    SchemaVerdict v = validate_file(path);
    EXPECT_TRUE(v.valid) << path << ":\n" << v.errors << "\n" << read_text(path);
    return receipt(id);
  }
};

TEST_F(ReceiptSchemaTest, ABuiltSignedRunWithEveryKindOfOutputMatchesTheSchema) {
  fs::create_directories(state_);
  auto key = sealrun({"key", "generate", "--out-dir", state_ + "/keys"});
  ASSERT_EQ(key.status.code, 0) << key.err;
  auto a = freeze(
      "cd /out && /usr/bin/python3 -c '"
      "import os\n"
      "open(\"file.txt\", \"w\").write(\"real\\n\")\n"
      "os.link(\"file.txt\", \"hard.txt\")\n"
      "os.symlink(\"file.txt\", \"link\")\n"
      "os.symlink(b\"t\\xff\", b\"link\\xfe\")\n"
      "os.mkfifo(\"fifo\")\n"
      "open(b\"raw\\xff\", \"wb\").write(b\"x\")\n"
      "os.makedirs(\"d/e\"); open(\"d/e/deep\", \"w\").write(\"deep\")\n"
      "' && echo to-stdout && echo to-stderr >&2");
  auto c = run(a, "built");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json r = expect_valid_receipt("built");
  EXPECT_EQ(r["state"], "built");
  EXPECT_TRUE(r["signing"].is_object()) << r["signing"];
  EXPECT_TRUE(r["admission"].is_object());
  EXPECT_TRUE(r["grant"].is_object());
  EXPECT_TRUE(r["owned_space"].is_object()) << r["owned_space"];
  EXPECT_EQ(r["outputs_total"], 7) << r["outputs"].dump();
  std::set<std::string> kinds;
  for (const auto& o : r["outputs"]) kinds.insert(o.value("kind", "file"));
  EXPECT_EQ(kinds, (std::set<std::string>{"file", "symlink", "fifo"}));

  // The schema is not vacuous: each of these edits of a real receipt is refused.
  struct Edit {
    const char* what;
    void (*apply)(json&);
  };
  const Edit refused[] = {
      {"an extra top-level key", [](json& d) { d["extra"] = 1; }},
      {"a renamed field",
       [](json& d) {
         d["status"] = d["state"];
         d.erase("state");
       }},
      {"a missing required field", [](json& d) { d.erase("stop_confirmed"); }},
      {"an unknown state", [](json& d) { d["state"] = "passed"; }},
      {"built with a non-zero exit", [](json& d) { d["exit"] = 5; }},
      {"a counter without its fellows", [](json& d) { d["commands_total"] = 1; }},
      {"an unknown key in a command", [](json& d) { d["commands"][0]["pid"] = 1; }},
      {"a file output without its digest", [](json& d) { d["outputs"][0].erase("sha256"); }},
      {"an owned space of an unknown kind",
       [](json& d) {
         d["owned_space"] = {{"kind", "tmpfs"}, {"size_bytes", 1}, {"inodes", 1}};
       }},
      {"a directory owned space that does not say why",
       [](json& d) {
         d["owned_space"] = {{"kind", "directory"}, {"size_bytes", 1}, {"inodes", 1}};
       }},
      {"a file system owned space with a why_not",
       [](json& d) {
         d["owned_space"] = {
             {"kind", "filesystem"}, {"size_bytes", 1}, {"inodes", 1}, {"why_not", "x"}};
       }},
  };
  for (const auto& e : refused) {
    json doc = r;
    e.apply(doc);
    EXPECT_FALSE(validate_json(doc, dir_ / "edited.json").valid) << "accepted: " << e.what;
  }
  // owned_space in each of its forms (a run makes only the one this host allows).
  const json spaces[] = {
      nullptr,
      {{"kind", "filesystem"}, {"size_bytes", 8589934592}, {"inodes", 1048576}},
      {{"kind", "directory"},
       {"size_bytes", 8589934592},
       {"inodes", 1048576},
       {"why_not", "the owned file system needs root (mount, losetup)"}},
  };
  for (const auto& s : spaces) {
    json doc = r;
    doc["owned_space"] = s;
    auto v = validate_json(doc, dir_ / "owned_space.json");
    EXPECT_TRUE(v.valid) << s.dump() << ": " << v.errors;
  }
}

TEST_F(ReceiptSchemaTest, AFailedRunMatchesTheSchema) {
  auto a = freeze("echo about to fail >&2; exit 3");
  auto c = run(a, "failed");
  ASSERT_EQ(c.status.code, 5) << c.out << c.err;
  json r = expect_valid_receipt("failed");
  EXPECT_EQ(r["state"], "failed");
  EXPECT_TRUE(r["signing"].is_null());
  EXPECT_EQ(r["commands"][0]["exit"], 3);
}

TEST_F(ReceiptSchemaTest, ARefusedRunMatchesTheSchema) {
  auto a = freeze("echo never > /out/never");
  Frozen wrong = a;
  wrong.sha256 = std::string(64, '0');
  auto c = run(wrong, "refused");
  ASSERT_EQ(c.status.code, 3) << c.out << c.err;
  EXPECT_NE(receipt_path("refused").find("/refusals/"), std::string::npos)
      << receipt_path("refused");
  json r = expect_valid_receipt("refused");
  EXPECT_EQ(r["state"], "not_run");
  EXPECT_TRUE(r["commands"].empty());
  EXPECT_TRUE(r["outputs_total"].is_null());
}

TEST_F(ReceiptSchemaTest, AGrowthGuardStopMatchesTheSchema) {
  auto a = freeze("dd if=/dev/zero of=/scratch/big bs=1M count=64 2>/dev/null; sleep 60",
                  {"limits.owned_max_bytes=16777216"});
  auto c = run(a, "grow");
  ASSERT_EQ(c.status.code, 6) << c.out << c.err;
  json r = expect_valid_receipt("grow");
  EXPECT_EQ(r["guard"]["name"], "owned_max_bytes");
  EXPECT_EQ(r["state"], "failed");
}

TEST_F(ReceiptSchemaTest, AReceiptShrunkByItsOutputsMatchesTheSchema) {
  auto a = freeze(
      "cd /out && /usr/bin/python3 -c '"
      "import os\n"
      "for i in range(3000):\n"
      "  open(\"output-file-with-a-longish-name-%05d\" % i, \"w\").write(str(i))\n"
      "for i in range(200): os.symlink(\"t%d\" % i, \"link-%d\" % i)\n"
      "open(b\"raw\\xff\", \"wb\").write(b\"x\")\n"
      "'",
      {"limits.receipt_max_bytes=65536"});
  auto c = run(a, "shrunk");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  EXPECT_LE(fs::file_size(receipt_path("shrunk")), 65536u);
  json r = expect_valid_receipt("shrunk");
  EXPECT_EQ(r["outputs_total"], 3201);
  EXPECT_LT(r["outputs"].size(), 3201u);
  EXPECT_FALSE(r["truncated"].empty());
}

// The last resort cannot be reached through a run on this machine without thousands of cleanup
// actions, so the real renderer is driven directly: 10,000 cleanup entries under a 16 KiB bound.
TEST(ReceiptSchema, TheLastResortWithItsCountersMatchesTheSchema) {
  receipt::Receipt r;
  r.id = "last-resort";
  r.state = "failed";
  r.exit = 7;
  r.reason = "cleanup could not be confirmed";
  r.admission_sha256 = std::string(64, 'a');
  r.started = r.finished = "2025-01-31T12:00:00.123Z";
  r.verifications.push_back({"admission", std::string(64, 'a'), std::string(64, 'a'), true});
  receipt::CommandRecord job;
  job.label = "job";
  job.argv = {"/bin/sh", "-c", "true"};
  job.exit = 0;
  job.started = job.finished = r.started;
  job.stdout_record = {std::string(64, '1'), 0, 0, false, ""};
  job.stderr_record = {std::string(64, '2'), 0, 0, false, ""};
  r.commands.push_back(job);
  for (int i = 0; i < 10000; ++i)
    r.cleanup.push_back({"remove leftover " + std::to_string(i), i % 1000 != 0, "detail"});
  r.outputs_recorded = true;
  r.sealrun_version = {{"version", "0.0.0"}, {"commit", "unknown"}, {"dirty", false}};
  r.signing = nullptr;
  TempDir dir;
  std::string path = dir / "receipt.json";
  std::string bytes = receipt::render_receipt(r, 16 * 1024);
  write_text(path, bytes);
  json doc = read_json(path);
  ASSERT_TRUE(doc.contains("cleanup_total")) << bytes.substr(0, 2000);
  EXPECT_EQ(doc["cleanup_total"], 10000);
  EXPECT_EQ(doc["cleanup_failed"], 10);
  SchemaVerdict v = validate_file(path);
  EXPECT_TRUE(v.valid) << v.errors;
  doc.erase("verifications_total");
  EXPECT_FALSE(validate_json(doc, dir / "edited.json").valid)
      << "a receipt with some of the counters but not all was accepted";
}

// The section of docs/receipt.md headed "## Fields", up to the next "## " heading.
std::string fields_section() {
  std::string doc = read_text(kDocPath);
  size_t start = doc.find("\n## Fields\n");
  EXPECT_NE(start, std::string::npos) << kDocPath << " has no \"## Fields\" section";
  if (start == std::string::npos) return "";
  size_t end = doc.find("\n## ", start + 1);
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::set<std::string> schema_types(const json& property) {
  std::set<std::string> out;
  const json& t = property["type"];
  if (t.is_string()) out.insert(t.get<std::string>());
  if (t.is_array())
    for (const auto& e : t) out.insert(e.get<std::string>());
  return out;
}

std::set<std::string> table_types(uint8_t kinds) {
  std::set<std::string> out;
  if (kinds & receipt::kJsonString) out.insert("string");
  if (kinds & receipt::kJsonInteger) out.insert("integer");
  if (kinds & receipt::kJsonBool) out.insert("boolean");
  if (kinds & receipt::kJsonArray) out.insert("array");
  if (kinds & receipt::kJsonObject) out.insert("object");
  if (kinds & receipt::kJsonNull) out.insert("null");
  return out;
}

TEST(ReceiptSchema, EveryFieldOfTheWriterIsInTheSchemaAndDocumented) {
  json schema = read_json(kSchemaPath);
  ASSERT_TRUE(schema.is_object());
  EXPECT_EQ(schema["additionalProperties"], false);
  const json& props = schema["properties"];
  std::set<std::string> required;
  for (const auto& k : schema["required"]) required.insert(k.get<std::string>());
  std::string section = fields_section();
  std::set<std::string> table;
  for (const auto& f : receipt::kReceiptFields) {
    std::string key(f.key);
    table.insert(key);
    SCOPED_TRACE(key);
    ASSERT_TRUE(props.contains(key)) << "not in docs/receipt.schema.json";
    EXPECT_EQ(schema_types(props[key]), table_types(f.kinds));
    EXPECT_EQ(required.count(key) == 1, f.required);
    EXPECT_NE(section.find("`" + key + "`"), std::string::npos)
        << "not documented in docs/receipt.md, section Fields";
  }
  // The other way round: the schema describes nothing the writer does not have, and the docs
  // describe everything the schema has.
  for (const auto& [key, value] : props.items()) {
    SCOPED_TRACE(key);
    EXPECT_EQ(table.count(key), 1u)
        << "in the schema but not in controller/receipt/receipt_fields.h";
    EXPECT_NE(section.find("`" + key + "`"), std::string::npos)
        << "not documented in docs/receipt.md, section Fields";
  }
}

}  // namespace
}  // namespace sealrun::testing
