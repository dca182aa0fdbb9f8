// libinotifytools (Debian: libinotifytools0-dev) and the kernel's inotify constants.
#include <sys/inotify.h>
#include <inotifytools/inotifytools.h>
