/* harness/base/fileio.h — the harness's file I/O: reading a whole regular file within a limit
 * (never blocking on a FIFO or a device), writing one atomically, and the path questions case
 * discovery and loading ask.
 */
#ifndef QMM_HARNESS_FILEIO_H
#define QMM_HARNESS_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/error.h"

/* Reads a whole regular file (at most `max` bytes; larger is an error). *buf is malloc'd.
 * Anything else (a FIFO, a device, a directory, a socket) is refused without blocking:
 * "PATH: not a regular file (a FIFO)". A symlink is followed. No more than the file's size
 * is read: a file that reads on past it (one that grows, a /proc file whose size says 0) is
 * an error, so the size checked against a budget is what the read takes. */
int qh_read_file(const char *path, size_t max, uint8_t **buf, size_t *len, qh_error *err);
/* This executable's path (/proc/self/exe resolved) into buf: its length, or -1 when it cannot
 * be read or does not fit. */
int qh_self_exe(char *buf, size_t size);
/* "a FIFO", "a directory", ... for a stat mode, as the messages above say it. */
const char *qh_file_kind(unsigned mode);
/* Creates a new file beside `path` (PATH.tmp-RANDOM, its name in tmp) with an unpredictable
 * name, O_EXCL | O_NOFOLLOW, so neither a planted file nor a planted symlink can take the
 * write. The fd (O_CLOEXEC), or -1 with err. */
int qh_open_temp(const char *path, char *tmp, size_t size, qh_error *err);
/* Writes `len` bytes to path via a temporary file in the same directory (qh_open_temp) and
 * rename(2). */
int qh_write_file_atomic(const char *path, const void *buf, size_t len, qh_error *err);

/* "DIR/NAME" (one '/' between them; NAME alone when DIR is ""), malloc'd; NULL when memory
 * runs out. */
char *qh_path_join(const char *dir, const char *name);
/* Something is there under this name (a dangling symlink, a FIFO, a directory, ...). */
int qh_path_exists(const char *path);
/* A directory is there, or a symlink to one. */
int qh_path_is_dir(const char *path);

#endif /* QMM_HARNESS_FILEIO_H */
