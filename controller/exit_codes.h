// SPDX-License-Identifier: Apache-2.0
// The exit codes moved to core/exit_codes.h, where remote/ and the tests read the same numbers;
// this name stays so that code written against it keeps building.
#pragma once

#include "core/exit_codes.h"
