// libfuse3's low-level API (Debian: libfuse3-dev), version 3.12, and the helpers Swift cannot
// write itself: libfuse's buffer vectors are initialised by a macro, its loop configuration
// is versioned by macros. No feature macro (_GNU_SOURCE) is defined here: the system headers
// this includes must read as they do in Swift's Glibc module, or their types clash; the GNU
// calls the mount needs are in CUbiquityShims.
#define FUSE_USE_VERSION 312
#include <stddef.h>
#include <fuse_lowlevel.h>
#include <sys/types.h>

/// Answers a read with `size` bytes of `fd` from `offset` (spliced when the kernel can).
static inline int ub_fuse_reply_fd(fuse_req_t req, int fd, off_t offset, size_t size) {
    struct fuse_bufvec buffer = FUSE_BUFVEC_INIT(size);
    buffer.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    buffer.buf[0].fd = fd;
    buffer.buf[0].pos = offset;
    return fuse_reply_data(req, &buffer, FUSE_BUF_SPLICE_MOVE);
}

/// Copies a write's buffers to `fd` at `offset`; the bytes written or -errno.
static inline ssize_t ub_fuse_write_to_fd(struct fuse_bufvec *input, int fd, off_t offset) {
    struct fuse_bufvec output = FUSE_BUFVEC_INIT(fuse_buf_size(input));
    output.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    output.buf[0].fd = fd;
    output.buf[0].pos = offset;
    return fuse_buf_copy(&output, input, FUSE_BUF_SPLICE_NONBLOCK);
}

/// Runs the session's multi-threaded loop (at most `max_threads` threads, `idle` kept idle)
/// until it exits; 0 or an error.
static inline int ub_fuse_loop(struct fuse_session *session, unsigned max_threads, unsigned idle) {
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    if (config == NULL) return -1;
    fuse_loop_cfg_set_clone_fd(config, 0);
    fuse_loop_cfg_set_max_threads(config, max_threads);
    fuse_loop_cfg_set_idle_threads(config, idle);
    int result = fuse_session_loop_mt(session, config);
    fuse_loop_cfg_destroy(config);
    return result;
}

/// A new session for `argc` mount options in `argv` (argv[0] the program).
static inline struct fuse_session *ub_fuse_session_new(int argc, char **argv, const struct fuse_lowlevel_ops *ops, void *userdata) {
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_session *session = fuse_session_new(&args, ops, sizeof(*ops), userdata);
    fuse_opt_free_args(&args);
    return session;
}
