// SPDX-License-Identifier: Apache-2.0
// Result<T> and Error: how every module below the controller reports failure.
//
// An Error carries the errno captured once at the failing call (0 when the failure is not a system
// error) and a context chain that grows outward as the error travels up ("open admission: read
// /x/a.json: Permission denied"). No exceptions cross a module boundary; the controller turns an
// Error into a message and an exit code. GCC 12 has no std::expected, hence this small type.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace sealrun {

// The English description of an errno value ("No such file or directory"), or "errno N" for one
// the C library does not know. Unlike strerror(3) it is safe from any thread (the hashing pool and
// the census thread report errors too) and does not depend on the locale.
const char* errno_text(int err);

class Error {
 public:
  Error() = default;
  // A failure that is not a system call's: `what` says what is wrong, for a person.
  static Error make(std::string what) { return Error(0, std::move(what)); }
  // A system call failed: `what` names the call and its object; errno is read now, once.
  static Error from_errno(std::string what) { return Error(errno, std::move(what)); }
  static Error with_errno(int err, std::string what) { return Error(err, std::move(what)); }

  // Adds an outer layer of context ("while doing X").
  Error&& context(std::string outer) && {
    chain_.insert(chain_.begin(), std::move(outer));
    return std::move(*this);
  }
  Error& context(std::string outer) & {
    chain_.insert(chain_.begin(), std::move(outer));
    return *this;
  }

  int err() const { return err_; }
  const std::vector<std::string>& chain() const { return chain_; }
  // "outer: inner: <errno_text(errno)>".
  std::string message() const;

 private:
  Error(int err, std::string what) : err_(err) { chain_.push_back(std::move(what)); }
  int err_ = 0;
  std::vector<std::string> chain_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value)
      : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error)
      : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

  // Adds context to a failure; a success passes through unchanged.
  Result&& context(std::string outer) && {
    if (!ok()) std::get<1>(v_).context(std::move(outer));
    return std::move(*this);
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error)
      : error_(std::move(error)), failed_(true) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  void value() const {}
  const Error& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }
  Result&& context(std::string outer) && {
    if (failed_) error_.context(std::move(outer));
    return std::move(*this);
  }

 private:
  Error error_;
  bool failed_ = false;
};

using Status = Result<void>;
inline Status ok_status() { return {}; }

}  // namespace sealrun

// SEALRUN_TRY(expr): evaluates a Result; on failure returns its Error from the enclosing function,
// otherwise yields the value. (A GNU statement expression: GCC and Clang both support it.)
#define SEALRUN_TRY(expr)                                                         \
  ({                                                                              \
    auto sealrun_try_result_ = (expr);                                            \
    if (!sealrun_try_result_.ok()) return std::move(sealrun_try_result_).error(); \
    std::move(sealrun_try_result_).value();                                       \
  })

// SEALRUN_TRY_CTX(expr, ctx): like SEALRUN_TRY, adding an outer context string on failure.
#define SEALRUN_TRY_CTX(expr, ctx)                                                             \
  ({                                                                                           \
    auto sealrun_try_result_ = (expr);                                                         \
    if (!sealrun_try_result_.ok()) return std::move(sealrun_try_result_).error().context(ctx); \
    std::move(sealrun_try_result_).value();                                                    \
  })
