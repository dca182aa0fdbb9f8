// SPDX-License-Identifier: Apache-2.0
// Thin wrappers over Linux system calls that Swift's Glibc module does not expose:
// extended attributes, open-file-description locks, renameat2 and a thread's nice value.
#ifndef CUBIQUITY_SHIMS_H
#define CUBIQUITY_SHIMS_H
#include <stddef.h>
#include <sys/types.h>

/// Sets, reads, lists and removes an extended attribute (returns -1 and sets errno on failure).
int ub_setxattr(const char *path, const char *name, const void *value, size_t size, int flags);
ssize_t ub_getxattr(const char *path, const char *name, void *value, size_t size);
ssize_t ub_listxattr(const char *path, char *list, size_t size);
int ub_removexattr(const char *path, const char *name);
int ub_fsetxattr(int fd, const char *name, const void *value, size_t size, int flags);
ssize_t ub_fgetxattr(int fd, const char *name, void *value, size_t size);
ssize_t ub_flistxattr(int fd, char *list, size_t size);

/// Takes (type = F_RDLCK / F_WRLCK) or releases (F_UNLCK) an open-file-description lock on
/// the byte range [start, start + len). `wait` selects F_OFD_SETLKW over F_OFD_SETLK.
int ub_ofd_lock(int fd, int wait, short type, long long start, long long len);

/// renameat2(2) with RENAME_NOREPLACE (noreplace = 1) or RENAME_EXCHANGE (exchange = 1).
int ub_rename(const char *from, const char *to, int noreplace, int exchange);
/// renameat2(2) relative to folder descriptors, with the same flags.
int ub_renameat(int fromdir, const char *from, int todir, const char *to, int noreplace, int exchange);

/// The file-system type (statfs(2) f_type) of `path` in `*type`; returns -1 and sets errno on failure.
int ub_fs_type(const char *path, long long *type);

/// Sets the nice value of the calling thread only (setpriority(2) on its thread ID); returns
/// -1 and sets errno on failure (raising a thread's priority back needs privileges).
int ub_set_thread_nice(int nice);
/// The nice value of the calling thread.
int ub_thread_nice(void);

/// The user ID of the process at the other end of the connected Unix socket `fd`
/// (SO_PEERCRED) in `*uid`; returns -1 and sets errno on failure.
int ub_peer_uid(int fd, unsigned int *uid);

/// Asks the kernel to attach the sender's credentials to each datagram `fd` receives
/// (SO_PASSCRED); returns -1 and sets errno on failure.
int ub_pass_credentials(int fd);

/// Receives one datagram without waiting (recvmsg, MSG_DONTWAIT) and puts the user ID the kernel
/// vouches for (SCM_CREDENTIALS, with ub_pass_credentials) in `*uid`, or (unsigned)-1 when none
/// came; returns the byte count, or -1 with errno set.
ssize_t ub_recv_with_uid(int fd, void *buffer, size_t length, unsigned int *uid);

/// O_PATH (a GNU flag Swift's Glibc module does not show).
extern const int UB_O_PATH;

/// fallocate(2) (a GNU call Swift's Glibc module does not show).
int ub_fallocate(int fd, int mode, off_t offset, off_t length);

/// Gives the calling thread (and the threads it starts) a file descriptor table of its own,
/// with only 0, 1, 2 and `keep` open in it: /dev/fuse is then open only in the file system's
/// threads, so when a killed daemon's threads go, the kernel ends the connection (every access
/// answers ENOTCONN) even while another of its threads waits for an answer from the mount.
/// 0 or -1 (errno).
int ub_private_descriptors(int keep);

/// Whether `haystack` (`haystack_len` bytes) holds `needle` (`needle_len` bytes): memmem(3),
/// a GNU extension Swift's Glibc module does not expose. Returns 1 or 0.
int ub_contains_bytes(const void *haystack, size_t haystack_len, const void *needle, size_t needle_len);

#endif
