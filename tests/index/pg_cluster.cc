// SPDX-License-Identifier: Apache-2.0
// The throwaway PostgreSQL cluster (pg_cluster.h).
#include "tests/index/pg_cluster.h"

#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "index/db.h"

namespace sealrun::testing {

namespace {

constexpr char kBin[] = "/usr/lib/postgresql/15/bin";

std::string job_user() {
  const char* u = std::getenv("SEALRUN_JOB_USER");
  return u && *u ? u : "sealrun";
}

}  // namespace

Result<PgCluster*> PgCluster::start() {
  std::unique_ptr<PgCluster> c(new PgCluster());
  char tmpl[] = "/tmp/sealrun-pg-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return Error::from_errno("mkdtemp");
  c->dir_ = tmpl;
  c->socket_dir_ = c->dir_ + "/sock";
  std::string prefix;
  if (::geteuid() == 0) {
    c->user_ = job_user();
    struct passwd* pw = ::getpwnam(c->user_.c_str());
    if (pw == nullptr) return Error::make("no user " + c->user_ + " to own the PostgreSQL cluster");
    if (::chmod(tmpl, 0755) != 0 || ::chown(tmpl, pw->pw_uid, pw->pw_gid) != 0)
      return Error::from_errno("chown " + c->dir_);
    prefix = "runuser -u " + c->user_ + " -- ";
  } else {
    struct passwd* pw = ::getpwuid(::geteuid());
    c->user_ = pw ? pw->pw_name : "postgres";
  }
  std::string init = fmt::format(
      "{}{}/initdb -D {}/data -U {} --auth=trust --no-sync -E UTF8 --locale=C >{}/initdb.log 2>&1 "
      "&& {}mkdir {}",
      prefix, kBin, c->dir_, c->user_, c->dir_, prefix, c->socket_dir_);
  if (std::system(init.c_str()) != 0)
    return Error::make("initdb failed: see " + c->dir_ + "/initdb.log");
  std::string start = fmt::format(
      "{}{}/pg_ctl -D {}/data -l {}/server.log -w -t 60 -o \"-k {} -c listen_addresses='' "
      "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=50\" "
      "start >/dev/null 2>&1",
      prefix, kBin, c->dir_, c->dir_, c->socket_dir_);
  if (std::system(start.c_str()) != 0)
    return Error::make("pg_ctl start failed: see " + c->dir_ + "/server.log");
  c->running_ = true;
  return c.release();
}

PgCluster::~PgCluster() {
  if (running_) {
    std::string prefix = ::geteuid() == 0 ? "runuser -u " + user_ + " -- " : "";
    std::string stop = fmt::format("{}{}/pg_ctl -D {}/data -m immediate -w stop >/dev/null 2>&1",
                                   prefix, kBin, dir_);
    (void)std::system(stop.c_str());
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

Result<std::string> PgCluster::new_database() {
  std::string base = fmt::format("postgresql:///{{}}?host={}&user={}", socket_dir_, user_);
  auto admin = SEALRUN_TRY(index::open_db(fmt::format(fmt::runtime(base), "postgres"), false));
  std::string name = fmt::format("t{}", ++databases_);
  SEALRUN_TRY(admin->exec("CREATE DATABASE " + name));
  return fmt::format(fmt::runtime(base), name);
}

}  // namespace sealrun::testing
