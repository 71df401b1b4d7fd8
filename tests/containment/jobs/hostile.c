// SPDX-License-Identifier: Apache-2.0
/* hostile: docs/acceptance.md's escape attempts 1-9, run INSIDE a sandbox. Built static (no
 * loader, no libraries), so the same binary also runs in the busybox image under podman.
 *
 * Usage: hostile COMMAND [ARGS]. Each attempt prints one line "name=RESULT" on stdout, where
 * RESULT is "ok" when the call succeeded (an escape, for the denials) or the errno name it failed
 * with ("EPERM"). The test on the outside decides what is acceptable; this program only tries. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char* name, long rc) {
  if (rc >= 0)
    printf("%s=ok\n", name);
  else
    printf("%s=%s\n", name, strerrorname_np(errno) ? strerrorname_np(errno) : "E?");
  fflush(stdout);
}

static void print_status_fields(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[512];
  if (!f) {
    printf("status=%s\n", strerrorname_np(errno));
    return;
  }
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "Cap", 3) || !strncmp(line, "NoNewPrivs", 10) ||
        !strncmp(line, "Seccomp:", 8)) {
      char* colon = strchr(line, ':');
      char* v = colon + 1;
      while (*v == ' ' || *v == '\t') ++v;
      *colon = '\0';
      printf("%s=%s", line, v);
    }
  }
  fclose(f);
  printf("uid=%d\neuid=%d\n", (int)getuid(), (int)geteuid());
}

static int cmd_tiocsti(void) {
  /* On the job's stdin (a pty slave in the test) and stdout; also with junk in the upper 32 bits
   * of the request, which the kernel drops when it narrows the argument. */
  char c = 'x';
  report("tiocsti_stdin", syscall(SYS_ioctl, 0, TIOCSTI, &c));
  report("tiocsti_stdout", syscall(SYS_ioctl, 1, TIOCSTI, &c));
  report("tiocsti_highbits", syscall(SYS_ioctl, 0, TIOCSTI | (1UL << 32), &c));
  char sub = 6; /* TIOCL_SETSEL-style subcode; the call itself must be refused */
  report("tioclinux", syscall(SYS_ioctl, 0, TIOCLINUX, &sub));
  return 0;
}

static int cmd_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) {
    report("fds", -1);
    return 1;
  }
  int self = dirfd(d);
  printf("fds=");
  int first = 1;
  struct dirent* e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == self) continue;
    printf("%s%s", first ? "" : ",", e->d_name);
    first = 0;
  }
  printf("\n");
  closedir(d);
  return 0;
}

static int cmd_write(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    char name[600];
    snprintf(name, sizeof name, "write:%s", argv[i]);
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      char path[600];
      snprintf(path, sizeof path, "%s/sealrun-escape", argv[i]);
      int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
      report(name, fd);
      if (fd >= 0) unlink(path);
    } else {
      int fd = open(argv[i], O_WRONLY);
      if (fd >= 0) {
        long rc = write(fd, "x", 0);
        report(name, rc < 0 ? rc : fd);
      } else {
        report(name, fd);
      }
    }
  }
  return 0;
}

static int run_program(char* const argv[]) {
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    execv(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int cmd_userns(void) {
  report("unshare_user", unshare(CLONE_NEWUSER));
  report("unshare_user_mount", unshare(CLONE_NEWUSER | CLONE_NEWNS));
  long rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
  if (rc == 0) _exit(0);
  if (rc > 0) waitpid((pid_t)rc, NULL, 0);
  report("clone_newuser", rc);
  rc = syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0);
  if (rc == 0) _exit(0);
  if (rc > 0) waitpid((pid_t)rc, NULL, 0);
  report("clone_newns", rc);
#if defined(__x86_64__)
  /* The same through the i386 ABI (int 0x80, unshare = 310): a filter that only knows x86_64
   * numbers would let this through. */
  long r32;
  __asm__ volatile("int $0x80" : "=a"(r32) : "a"(310L), "b"((long)CLONE_NEWUSER) : "memory");
  if (r32 < 0) errno = (int)-r32;
  report("unshare_user_i386", r32 < 0 ? -1 : 0);
#endif
  /* The unshare(1) program, if the sandbox shows one: exit status 0 would be an escape. */
  if (access("/usr/bin/unshare", X_OK) == 0) {
    char* u[] = {"/usr/bin/unshare", "-U", "/bin/true", NULL};
    char* ur[] = {"/usr/bin/unshare", "-Ur", "/bin/true", NULL};
    printf("unshare_U_exit=%d\n", run_program(u));
    printf("unshare_Ur_exit=%d\n", run_program(ur));
  }
  return 0;
}

static int cmd_mount(void) {
  mkdir("/tmp/x", 0700);
  report("mount_tmpfs", mount("x", "/tmp/x", "tmpfs", 0, NULL));
  const char* ns[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};
  for (unsigned i = 0; i < sizeof ns / sizeof ns[0]; ++i) {
    char path[64], name[64];
    snprintf(path, sizeof path, "/proc/1/ns/%s", ns[i]);
    snprintf(name, sizeof name, "setns_%s", ns[i]);
    int fd = open(path, O_RDONLY);
    /* If the namespace file cannot even be opened, the attempt fails there. */
    report(name, fd < 0 ? fd : setns(fd, 0));
    if (fd >= 0) close(fd);
  }
  long rc = ptrace(PTRACE_ATTACH, 1, NULL, NULL);
  report("ptrace_attach_1", rc);
  if (rc == 0) ptrace(PTRACE_DETACH, 1, NULL, NULL);
  report("ptrace_traceme", ptrace(PTRACE_TRACEME, 0, NULL, NULL));
  return 0;
}

static int cmd_kernel(void) {
  report("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1));
  report("add_key", syscall(SYS_add_key, "user", "sealrun", "x", 1, KEY_SPEC_PROCESS_KEYRING));
  report("request_key", syscall(SYS_request_key, "user", "sealrun", NULL, 0));
  report("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
  unsigned char params[120];
  memset(params, 0, sizeof params);
  report("io_uring_setup", syscall(SYS_io_uring_setup, 4, params));
  unsigned char attr[128];
  memset(attr, 0, sizeof attr);
  report("bpf", syscall(SYS_bpf, 0 /*BPF_MAP_CREATE*/, attr, sizeof attr));
  struct perf_event_attr pe;
  memset(&pe, 0, sizeof pe);
  pe.type = PERF_TYPE_SOFTWARE;
  pe.size = sizeof pe;
  pe.config = PERF_COUNT_SW_CPU_CLOCK;
  report("perf_event_open", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
  return 0;
}

static int cmd_connect(int argc, char** argv) {
  /* UDP connect() only picks a route: it sends nothing, yet fails with ENETUNREACH when there is
   * no route. The address is never contacted either way. */
  int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in out = {.sin_family = AF_INET, .sin_port = htons(80)};
  inet_pton(AF_INET, "10.255.255.1", &out.sin_addr);
  report("route_outside", u < 0 ? u : connect(u, (struct sockaddr*)&out, sizeof out));
  if (argc >= 1) { /* a TCP listener the test holds on the host's 127.0.0.1 */
    int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in lo = {.sin_family = AF_INET,
                             .sin_port = htons((unsigned short)atoi(argv[0]))};
    inet_pton(AF_INET, "127.0.0.1", &lo.sin_addr);
    report("connect_host_loopback", t < 0 ? t : connect(t, (struct sockaddr*)&lo, sizeof lo));
  }
  if (argc >= 2) { /* a host abstract unix socket: abstract names live in the network namespace */
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(argv[1]);
    memcpy(a.sun_path + 1, argv[1], n);
    report("connect_abstract",
           s < 0 ? s : connect(s, (struct sockaddr*)&a, (socklen_t)(sizeof(sa_family_t) + 1 + n)));
  }
  FILE* f = fopen("/proc/net/dev", "r");
  char line[512];
  int ifaces = 0;
  while (f && fgets(line, sizeof line, f))
    if (strchr(line, ':') && !strchr(line, '|')) ++ifaces;
  if (f) fclose(f);
  printf("interfaces=%d\n", ifaces);
  return 0;
}

static int cmd_forkbomb(int argc, char** argv) {
  /* Forks until fork fails or `limit` children exist; each child waits for its parent to end. */
  long limit = argc >= 1 ? atol(argv[0]) : 100000;
  long made = 0;
  int err = 0;
  pid_t* kids = calloc((size_t)limit, sizeof(pid_t));
  while (made < limit) {
    pid_t p = fork();
    if (p < 0) {
      err = errno;
      break;
    }
    if (p == 0) {
      pause();
      _exit(0);
    }
    kids[made++] = p;
  }
  printf("forked=%ld\nfork_error=%s\n", made, err ? strerrorname_np(err) : "none");
  fflush(stdout);
  for (long i = 0; i < made; ++i) kill(kids[i], SIGKILL);
  for (long i = 0; i < made; ++i) waitpid(kids[i], NULL, 0);
  return 0;
}

static void on_term(int sig) { (void)sig; }

static int cmd_sleep(int argc, char** argv) {
  /* sleep SECONDS [ignore-term] [children N]: children sleep too (a tree to tear down). */
  int secs = argc >= 1 ? atoi(argv[0]) : 60;
  int ignore = 0, children = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "ignore-term")) ignore = 1;
    if (!strcmp(argv[i], "children") && i + 1 < argc) children = atoi(argv[++i]);
  }
  if (ignore) signal(SIGTERM, on_term);
  for (int i = 0; i < children; ++i)
    if (fork() == 0) {
      setsid(); /* out of our session and group: only the pid namespace can catch it */
      for (;;) pause();
    }
  printf("sleeping=%d\n", (int)getpid());
  fflush(stdout);
  for (int left = secs; left > 0;) left = (int)sleep((unsigned)left);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: hostile status|tiocsti|fds|write PATH...|userns|mount|kernel|"
            "connect [PORT [ABSTRACT]]|forkbomb [N]|sleep S [ignore-term] [children N]\n");
    return 2;
  }
  const char* cmd = argv[1];
  int rest = argc - 2;
  char** args = argv + 2;
  if (!strcmp(cmd, "status")) {
    print_status_fields();
    return 0;
  }
  if (!strcmp(cmd, "tiocsti")) return cmd_tiocsti();
  if (!strcmp(cmd, "fds")) return cmd_fds();
  if (!strcmp(cmd, "write")) return cmd_write(rest, args);
  if (!strcmp(cmd, "userns")) return cmd_userns();
  if (!strcmp(cmd, "mount")) return cmd_mount();
  if (!strcmp(cmd, "kernel")) return cmd_kernel();
  if (!strcmp(cmd, "connect")) return cmd_connect(rest, args);
  if (!strcmp(cmd, "forkbomb")) return cmd_forkbomb(rest, args);
  if (!strcmp(cmd, "sleep")) return cmd_sleep(rest, args);
  fprintf(stderr, "hostile: unknown command %s\n", cmd);
  return 2;
}
