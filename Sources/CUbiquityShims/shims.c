// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <sys/vfs.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <unistd.h>
#include "CUbiquityShims.h"

int ub_setxattr(const char *path, const char *name, const void *value, size_t size, int flags) {
    return setxattr(path, name, value, size, flags);
}
ssize_t ub_getxattr(const char *path, const char *name, void *value, size_t size) {
    return getxattr(path, name, value, size);
}
ssize_t ub_listxattr(const char *path, char *list, size_t size) { return listxattr(path, list, size); }
int ub_removexattr(const char *path, const char *name) { return removexattr(path, name); }
int ub_fsetxattr(int fd, const char *name, const void *value, size_t size, int flags) {
    return fsetxattr(fd, name, value, size, flags);
}
ssize_t ub_fgetxattr(int fd, const char *name, void *value, size_t size) {
    return fgetxattr(fd, name, value, size);
}
ssize_t ub_flistxattr(int fd, char *list, size_t size) { return flistxattr(fd, list, size); }

int ub_ofd_lock(int fd, int wait, short type, long long start, long long len) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = len;
    return fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
}

int ub_rename(const char *from, const char *to, int noreplace, int exchange) {
    unsigned int flags = 0;
    if (noreplace) flags |= RENAME_NOREPLACE;
    if (exchange) flags |= RENAME_EXCHANGE;
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, flags);
}

int ub_renameat(int fromdir, const char *from, int todir, const char *to, int noreplace, int exchange) {
    unsigned int flags = 0;
    if (noreplace) flags |= RENAME_NOREPLACE;
    if (exchange) flags |= RENAME_EXCHANGE;
    return renameat2(fromdir, from, todir, to, flags);
}

int ub_fs_type(const char *path, long long *type) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    *type = (long long)info.f_type;
    return 0;
}

int ub_set_thread_nice(int nice) {
    // on Linux, PRIO_PROCESS with a thread ID sets that thread's nice value alone
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}
int ub_thread_nice(void) {
    return getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
}

int ub_peer_uid(int fd, unsigned int *uid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = (unsigned int)credentials.uid;
    return 0;
}

int ub_pass_credentials(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
}

ssize_t ub_recv_with_uid(int fd, void *buffer, size_t length, unsigned int *uid) {
    struct iovec vector = { .iov_base = buffer, .iov_len = length };
    union { struct cmsghdr align; char bytes[CMSG_SPACE(sizeof(struct ucred))]; } control;
    struct msghdr message = { 0 };
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof(control.bytes);
    ssize_t count = recvmsg(fd, &message, MSG_DONTWAIT);
    if (count < 0) return count;
    *uid = (unsigned int)-1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_CREDENTIALS) {
            struct ucred credentials;
            memcpy(&credentials, CMSG_DATA(header), sizeof(credentials));
            *uid = (unsigned int)credentials.uid;
        }
    }
    return count;
}

const int UB_O_PATH = O_PATH;

int ub_fallocate(int fd, int mode, off_t offset, off_t length) {
    return fallocate(fd, mode, offset, length);
}

int ub_private_descriptors(int keep) {
    if (unshare(CLONE_FILES) != 0) return -1;
    if (keep > 3) close_range(3, (unsigned)keep - 1, 0);
    close_range((unsigned)keep + 1, ~0U, 0);
    return 0;
}

int ub_contains_bytes(const void *haystack, size_t haystack_len, const void *needle, size_t needle_len) {
    return memmem(haystack, haystack_len, needle, needle_len) != NULL;
}
