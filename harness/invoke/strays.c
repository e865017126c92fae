/* harness/invoke/strays.c — see strays.h. */
#define _GNU_SOURCE
#include "harness/invoke/strays.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t watch_pid;

static void strays_at_exit(void)
{
    if (getpid() == watch_pid)
        qh_strays_end();
}

void qh_strays_watch(void)
{
    if (watch_pid)
        return;
    watch_pid = getpid();
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    atexit(strays_at_exit);
}

/* The parent pid in /proc/PID/stat (after the command name's closing parenthesis), or -1. */
static pid_t parent_of(const char *pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    int ppid;
    char state;
    if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
        return -1;
    return (pid_t)ppid;
}

/* Kills and reaps the children found in one look at /proc; how many. */
static int one_round(pid_t self)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    int found = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!isdigit((unsigned char)e->d_name[0]) || parent_of(e->d_name) != self)
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        found++;
    }
    closedir(d);
    return found;
}

int qh_strays_end(void)
{
    pid_t self = getpid();
    int total = 0;
    for (int round = 0; round < 64; round++) {
        int n = one_round(self);
        if (n == 0)
            break;
        total += n;
    }
    return total;
}

void qh_strays_reap_group(pid_t pgid)
{
    if (pgid > 0)
        while (waitpid(-pgid, NULL, WNOHANG) > 0) {
        }
}
