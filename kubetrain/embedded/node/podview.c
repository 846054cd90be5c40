/* The pod-view shim: interfaces report the pod IP, AF_UNSPEC wildcard binds, exec of mount paths.
 * Compiled at run time into an LD_PRELOAD library; podview.py says what and why. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- interface view: non-loopback IPv4 interfaces carry the pod IP ---- */

static int view_ready = 0, view_on = 0;
static struct in_addr pod_ip, pod_mask;

static void view_init(void) {
    if (view_ready) return;
    const char *ip = getenv("KUBETRAIN_POD_IP");
    view_on = ip != NULL && inet_pton(AF_INET, ip, &pod_ip) == 1;
    pod_mask.s_addr = htonl(0xffff0000u);
    const char *cidr = getenv("KUBETRAIN_POD_CIDR");
    const char *slash = cidr ? strchr(cidr, '/') : NULL;
    if (slash) {
        int bits = atoi(slash + 1);
        if (bits > 0 && bits <= 32) pod_mask.s_addr = htonl(0xffffffffu << (32 - bits));
    }
    view_ready = 1;
}

static int is_loopback_v4(const struct sockaddr *sa) {
    const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
    return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
}

static void set_v4(struct sockaddr *sa, struct in_addr a) {
    struct sockaddr_in *sin = (struct sockaddr_in *)sa;
    sin->sin_family = AF_INET;
    sin->sin_addr = a;
}

typedef int (*ioctl_fn)(int, unsigned long, void *);
static ioctl_fn real_ioctl_p;

int ioctl(int fd, unsigned long req, ...) {
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!real_ioctl_p) real_ioctl_p = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
    int rc = real_ioctl_p(fd, req, arg);
    view_init();
    if (rc != 0 || !view_on || arg == NULL) return rc;
    if (req == SIOCGIFCONF) {
        struct ifconf *ifc = arg;
        if (ifc->ifc_buf == NULL) return rc;
        int n = ifc->ifc_len / (int)sizeof(struct ifreq);
        for (int i = 0; i < n; i++) {
            struct sockaddr *sa = &ifc->ifc_req[i].ifr_addr;
            if (sa->sa_family == AF_INET && !is_loopback_v4(sa)) set_v4(sa, pod_ip);
        }
    } else if (req == SIOCGIFADDR || req == SIOCGIFNETMASK || req == SIOCGIFBRDADDR) {
        struct ifreq *ifr = arg, probe;
        memcpy(&probe, ifr, sizeof probe);
        if (real_ioctl_p(fd, SIOCGIFFLAGS, &probe) != 0 || (probe.ifr_flags & IFF_LOOPBACK)) return rc;
        if (req == SIOCGIFADDR) set_v4(&ifr->ifr_addr, pod_ip);
        else if (req == SIOCGIFNETMASK) set_v4(&ifr->ifr_netmask, pod_mask);
        else {
            struct in_addr b;
            b.s_addr = (pod_ip.s_addr & pod_mask.s_addr) | ~pod_mask.s_addr;
            set_v4(&ifr->ifr_broadaddr, b);
        }
    }
    return rc;
}

typedef int (*getifaddrs_fn)(struct ifaddrs **);
static getifaddrs_fn real_getifaddrs_p;

int getifaddrs(struct ifaddrs **out) {
    if (!real_getifaddrs_p) real_getifaddrs_p = (getifaddrs_fn)dlsym(RTLD_NEXT, "getifaddrs");
    int rc = real_getifaddrs_p(out);
    view_init();
    if (rc != 0 || !view_on) return rc;
    for (struct ifaddrs *a = *out; a; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || (a->ifa_flags & IFF_LOOPBACK)) continue;
        if (is_loopback_v4(a->ifa_addr)) continue;
        set_v4(a->ifa_addr, pod_ip);
        if (a->ifa_netmask) set_v4(a->ifa_netmask, pod_mask);
        if ((a->ifa_flags & IFF_BROADCAST) && a->ifa_broadaddr) {
            struct in_addr b;
            b.s_addr = (pod_ip.s_addr & pod_mask.s_addr) | ~pod_mask.s_addr;
            set_v4(a->ifa_broadaddr, b);
        }
    }
    return rc;
}

/* ---- exec of a mount path: run the file from the pod's sandbox ---- */

/* Find the local path for `path` in KUBETRAIN_PATH_MAP ({"<mount>": "<local>", ...}, JSON with
   plain strings); the longest mount that is a whole-path prefix wins. NULL when none matches. */
static const char *map_path(const char *path, char *buf, size_t size) {
    const char *map = getenv("KUBETRAIN_PATH_MAP");
    if (!map || !path || path[0] != '/') return NULL;
    char key[PATH_MAX], val[PATH_MAX];
    size_t best = 0;
    int found = 0;
    const char *p = map;
    for (;;) {
        char *dst[2] = {key, val};
        int ok = 1;
        for (int k = 0; k < 2; k++) {
            p = strchr(p, '"');
            if (!p) return found ? buf : NULL;
            p++;
            size_t n = 0;
            while (*p && *p != '"') {
                char c = *p++;
                if (c == '\\') {
                    c = *p++;
                    if (c == 'u' || c == 0) { ok = 0; c = '?'; }
                    else if (c == 'n') c = '\n';
                    else if (c == 't') c = '\t';
                }
                if (n + 1 < PATH_MAX) dst[k][n++] = c;
            }
            dst[k][n] = 0;
            if (*p) p++;
        }
        size_t klen = strlen(key);
        while (klen > 1 && key[klen - 1] == '/') key[--klen] = 0;
        if (ok && klen > 1 && klen > best && strncmp(path, key, klen) == 0
            && (path[klen] == '/' || path[klen] == 0)
            && strlen(val) + strlen(path + klen) + 1 <= size) {
            strcpy(buf, val);
            strcat(buf, path + klen);
            best = klen;
            found = 1;
        }
    }
}

static const char *mapped(const char *path, char *buf) {
    const char *m = map_path(path, buf, PATH_MAX);
    return m && access(path, F_OK) != 0 ? m : path;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*posix_spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                              const posix_spawnattr_t *, char *const[], char *const[]);

int execve(const char *path, char *const argv[], char *const envp[]) {
    static execve_fn real_p;
    if (!real_p) real_p = (execve_fn)dlsym(RTLD_NEXT, "execve");
    char buf[PATH_MAX];
    return real_p(mapped(path, buf), argv, envp);
}

int execv(const char *path, char *const argv[]) {
    static execv_fn real_p;
    if (!real_p) real_p = (execv_fn)dlsym(RTLD_NEXT, "execv");
    char buf[PATH_MAX];
    return real_p(mapped(path, buf), argv);
}

int execvp(const char *file, char *const argv[]) {
    static execv_fn real_p;
    if (!real_p) real_p = (execv_fn)dlsym(RTLD_NEXT, "execvp");
    char buf[PATH_MAX];
    return real_p(strchr(file, '/') ? mapped(file, buf) : file, argv);
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
    static execve_fn real_p;
    if (!real_p) real_p = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
    char buf[PATH_MAX];
    return real_p(strchr(file, '/') ? mapped(file, buf) : file, argv, envp);
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    static posix_spawn_fn real_p;
    if (!real_p) real_p = (posix_spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
    char buf[PATH_MAX];
    return real_p(pid, mapped(path, buf), fa, attr, argv, envp);
}

/* ---- a wildcard bind spelled AF_UNSPEC (Linux accepts it on AF_INET sockets) is a wildcard bind:
   hand it on as AF_INET 0.0.0.0 so the network shim puts it on the pod IP ---- */

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static bind_fn next_p;
    if (!next_p) next_p = (bind_fn)dlsym(RTLD_NEXT, "bind");
    view_init();
    if (view_on && addr && addr->sa_family == AF_UNSPEC && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in sin;
        memcpy(&sin, addr, sizeof sin);
        int domain = 0;
        socklen_t dlen = sizeof domain;
        if (sin.sin_addr.s_addr == htonl(INADDR_ANY)
            && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 && domain == AF_INET) {
            sin.sin_family = AF_INET;
            return next_p(fd, (struct sockaddr *)&sin, sizeof sin);
        }
    }
    return next_p(fd, addr, len);
}
