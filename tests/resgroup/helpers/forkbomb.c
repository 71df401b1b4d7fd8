// SPDX-License-Identifier: Apache-2.0
/* Test job: a fork bomb. Every process forks forever; when fork fails (the pids limit), it
 * sleeps briefly and tries again, so the group stays full until it is stopped. */
#include <unistd.h>

int main(void) {
  for (;;) {
    if (fork() < 0) usleep(20000);
  }
}
