// SPDX-License-Identifier: Apache-2.0
// A throwaway PostgreSQL cluster for the index's tests and benchmark: Debian's PostgreSQL 15
// (initdb, pg_ctl from /usr/lib/postgresql/15/bin), owned by the unprivileged job user when the
// test runs as root (the server refuses to run as root), listening only on a unix socket in its
// own temporary directory (no TCP port to collide with another build), fsync off (a test's data
// need not survive a crash). Stopped and removed with the object.
#pragma once

#include <string>

#include "core/result.h"

namespace sealrun::testing {

class PgCluster {
 public:
  // Starts the cluster (initdb and pg_ctl take a second or two).
  static Result<PgCluster*> start();
  ~PgCluster();
  // A new empty database of the cluster, as a libpq URL.
  Result<std::string> new_database();
  const std::string& dir() const { return dir_; }

 private:
  PgCluster() = default;
  std::string dir_, socket_dir_, user_;
  int databases_ = 0;
  bool running_ = false;
};

}  // namespace sealrun::testing
