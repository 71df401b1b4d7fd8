// SPDX-License-Identifier: Apache-2.0
/* Test job: leaves an orphan behind the way daemons do (fork, setsid, fork again, the middle
 * process exits), with SIGTERM ignored, so only a group-wide KILL ends it. Prints the orphan's
 * pid on stdout and exits 0. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  int fds[2];
  if (pipe(fds) != 0) return 2;
  pid_t mid = fork();
  if (mid < 0) return 3;
  if (mid == 0) {
    setsid();
    pid_t orphan = fork();
    if (orphan == 0) {
      signal(SIGTERM, SIG_IGN);
      close(fds[0]);
      dprintf(fds[1], "%d\n", (int)getpid());
      close(fds[1]);
      for (;;) pause();
    }
    _exit(orphan < 0 ? 4 : 0);
  }
  close(fds[1]);
  char buf[32];
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  if (n <= 0) return 5;
  buf[n] = 0;
  fputs(buf, stdout);
  int st;
  waitpid(mid, &st, 0);
  return 0;
}
