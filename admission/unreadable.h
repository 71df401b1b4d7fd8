// SPDX-License-Identifier: Apache-2.0
// A pinned path that the invoking user cannot read. Pins are verified (and frozen) with the
// caller's own rights; an ordinary user may lack the right to read a file or list a directory
// that a pin covers (a root-only rules directory under /usr, a file made mode 000 after freeze).
// That is not a mismatch: nothing is known about the bytes. It is its own refusal, saying which
// path and which user, and what to do about it.
//
// The hashing code reports the failure as any other (an Error whose errno is EACCES or EPERM);
// the path is found here afterwards: the pin itself for a file, the first entry below it that
// this user may not read for a directory. That costs a walk only when a pin already failed so.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace sealrun::admission {

// The invoking (effective) user's name, or "uid N" when the user database has none.
std::string invoking_user_name();

// "cannot read PATH as USER: run as root, or pin a tree you can read".
std::string cannot_read_message(std::string_view path, std::string_view user);

// The first entry below `root` (or `root` itself) that the invoking user cannot read: a regular
// file it may not open, a directory it may not list or enter. In name order, depth first;
// symlinks are not followed (a pin records their text). Nothing when every entry is readable.
Result<std::optional<std::string>> first_unreadable(const std::string& root);

// When `error` stopped the reading of the pinned path `pinned` because the kernel refused this
// user (EACCES or EPERM): the path it may not read — `pinned` itself for a file, the first
// unreadable entry below it for a directory. Nothing for every other failure (a missing file, a
// changed tree, an I/O error), and for a directory in which no such entry is found (any more).
std::optional<std::string> unreadable_path(const Error& error, const std::string& pinned);

// For a command that stops at the first problem (`admit freeze`): an Error saying
// cannot_read_message() for the invoking user when `result` failed so on `pinned`, else `result`
// as it is.
template <typename T>
Result<T> said_unreadable(Result<T> result, const std::string& pinned) {
  if (result.ok()) return result;
  if (auto path = unreadable_path(result.error(), pinned))
    return Error::make(cannot_read_message(*path, invoking_user_name()));
  return result;
}

}  // namespace sealrun::admission
