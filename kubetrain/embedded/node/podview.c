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

/* ---- interface view: a pod sees `lo` and `eth0`, and eth0 carries the pod IP ----
 * The machine's first non-loopback interface with an IPv4 address is shown as `eth0` (its
 * IPv4 address and mask the pod's; one IPv4 address); its other interfaces are hidden; with none,
 * an `eth0` is made up. So `OMPI_MCA_btl_tcp_if_exclude=lo,...` keeps the pod address, as in a pod. */

static int view_ready = 0, view_on = 0;
static struct in_addr pod_ip, pod_mask;
static const char POD_IF[] = "eth0";
static char host_if[IF_NAMESIZE]; /* the machine's interface shown as eth0 ("" when it has none) */
static int host_if_known = 0;

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

static struct in_addr pod_broadcast(void) {
    struct in_addr b;
    b.s_addr = (pod_ip.s_addr & pod_mask.s_addr) | ~pod_mask.s_addr;
    return b;
}

typedef int (*getifaddrs_fn)(struct ifaddrs **);
typedef void (*freeifaddrs_fn)(struct ifaddrs *);
static getifaddrs_fn real_getifaddrs_p;
static freeifaddrs_fn real_freeifaddrs_p;

static void resolve_ifaddrs(void) {
    if (!real_getifaddrs_p) real_getifaddrs_p = (getifaddrs_fn)dlsym(RTLD_NEXT, "getifaddrs");
    if (!real_freeifaddrs_p) real_freeifaddrs_p = (freeifaddrs_fn)dlsym(RTLD_NEXT, "freeifaddrs");
}

static int is_host_v4(const struct ifaddrs *a) {
    return a->ifa_addr && a->ifa_addr->sa_family == AF_INET && !(a->ifa_flags & IFF_LOOPBACK)
        && !is_loopback_v4(a->ifa_addr) && a->ifa_name;
}

/* Preferably one that is up and running and not a container bridge (docker0 is often first). */
static void learn_host_if(const struct ifaddrs *list) {
    if (host_if_known) return;
    host_if[0] = 0;
    for (int pass = 0; pass < 2 && !host_if[0]; pass++) {
        for (const struct ifaddrs *a = list; a; a = a->ifa_next) {
            int good = (a->ifa_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING)
                && strncmp(a->ifa_name ? a->ifa_name : "", "docker", 6) != 0;
            if (is_host_v4(a) && (pass == 1 || good)) {
                strncpy(host_if, a->ifa_name, IF_NAMESIZE - 1);
                host_if[IF_NAMESIZE - 1] = 0;
                break;
            }
        }
    }
    host_if_known = 1;
}

static const char *host_if_name(void) {
    if (!host_if_known) {
        resolve_ifaddrs();
        struct ifaddrs *list = NULL;
        if (real_getifaddrs_p(&list) == 0) {
            learn_host_if(list);
            real_freeifaddrs_p(list);
        }
        host_if_known = 1;
    }
    return host_if;
}

/* A view list: copies of the kept entries (pointing into glibc's list, which it keeps alive) and
   a made-up eth0; freeifaddrs frees both. */
struct view_block {
    struct view_block *next;
    struct ifaddrs *orig;
    struct sockaddr_in addr, mask, brd;
    struct ifaddrs nodes[];
};
static struct view_block *blocks;
static char blocks_lock;

static void lock_blocks(void) { while (__atomic_test_and_set(&blocks_lock, __ATOMIC_ACQUIRE)) {} }
static void unlock_blocks(void) { __atomic_clear(&blocks_lock, __ATOMIC_RELEASE); }

int getifaddrs(struct ifaddrs **out) {
    resolve_ifaddrs();
    int rc = real_getifaddrs_p(out);
    view_init();
    if (rc != 0 || !view_on) return rc;
    struct ifaddrs *orig = *out;
    learn_host_if(orig);
    size_t n = 0;
    for (struct ifaddrs *a = orig; a; a = a->ifa_next) n++;
    struct view_block *b = calloc(1, sizeof *b + (n + 1) * sizeof(struct ifaddrs));
    if (!b) return rc;
    b->orig = orig;
    size_t k = 0;
    int shown_v4 = 0;
    for (struct ifaddrs *a = orig; a; a = a->ifa_next) {
        int loop = (a->ifa_flags & IFF_LOOPBACK) != 0;
        int primary = !loop && host_if[0] && a->ifa_name && strcmp(a->ifa_name, host_if) == 0;
        if (!loop && !primary) continue;
        if (primary && a->ifa_addr && a->ifa_addr->sa_family == AF_INET) {
            if (shown_v4) continue; /* one pod address */
            shown_v4 = 1;
            set_v4(a->ifa_addr, pod_ip);
            if (a->ifa_netmask) set_v4(a->ifa_netmask, pod_mask);
            if ((a->ifa_flags & IFF_BROADCAST) && a->ifa_broadaddr) set_v4(a->ifa_broadaddr, pod_broadcast());
        }
        struct ifaddrs *v = &b->nodes[k++];
        *v = *a;
        if (primary) v->ifa_name = (char *)POD_IF;
    }
    if (!host_if[0]) { /* the machine has no other interface: a pod still has its eth0 */
        struct ifaddrs *v = &b->nodes[k++];
        memset(v, 0, sizeof *v);
        v->ifa_name = (char *)POD_IF;
        v->ifa_flags = IFF_UP | IFF_BROADCAST | IFF_RUNNING | IFF_MULTICAST;
        set_v4((struct sockaddr *)&b->addr, pod_ip);
        set_v4((struct sockaddr *)&b->mask, pod_mask);
        set_v4((struct sockaddr *)&b->brd, pod_broadcast());
        v->ifa_addr = (struct sockaddr *)&b->addr;
        v->ifa_netmask = (struct sockaddr *)&b->mask;
        v->ifa_broadaddr = (struct sockaddr *)&b->brd;
    }
    for (size_t i = 0; i < k; i++) b->nodes[i].ifa_next = i + 1 < k ? &b->nodes[i + 1] : NULL;
    lock_blocks();
    b->next = blocks;
    blocks = b;
    unlock_blocks();
    *out = &b->nodes[0];
    return 0;
}

void freeifaddrs(struct ifaddrs *ifa) {
    resolve_ifaddrs();
    lock_blocks();
    struct view_block **pp = &blocks;
    while (*pp && &(*pp)->nodes[0] != ifa) pp = &(*pp)->next;
    struct view_block *b = *pp;
    if (b) *pp = b->next;
    unlock_blocks();
    if (b) {
        real_freeifaddrs_p(b->orig);
        free(b);
        return;
    }
    real_freeifaddrs_p(ifa);
}

typedef int (*ioctl_fn)(int, unsigned long, void *);
static ioctl_fn real_ioctl_p;

static int names_interface(unsigned long req) {
    switch (req) {
    case SIOCGIFFLAGS: case SIOCGIFADDR: case SIOCGIFNETMASK: case SIOCGIFBRDADDR:
    case SIOCGIFDSTADDR: case SIOCGIFINDEX: case SIOCGIFMTU: case SIOCGIFHWADDR:
    case SIOCGIFMETRIC: case SIOCGIFTXQLEN:
        return 1;
    default:
        return 0;
    }
}

/* An ifreq request about the made-up eth0 of a machine without another interface (an index no
   real interface of a small machine has). */
#define MADE_UP_INDEX 9999
static int made_up_eth0(unsigned long req, struct ifreq *ifr) {
    switch (req) {
    case SIOCGIFFLAGS: ifr->ifr_flags = IFF_UP | IFF_BROADCAST | IFF_RUNNING | IFF_MULTICAST; return 0;
    case SIOCGIFADDR: set_v4(&ifr->ifr_addr, pod_ip); return 0;
    case SIOCGIFNETMASK: set_v4(&ifr->ifr_netmask, pod_mask); return 0;
    case SIOCGIFBRDADDR: set_v4(&ifr->ifr_broadaddr, pod_broadcast()); return 0;
    case SIOCGIFMTU: ifr->ifr_mtu = 1500; return 0;
    case SIOCGIFINDEX: ifr->ifr_ifindex = MADE_UP_INDEX; return 0;
    case SIOCGIFMETRIC: ifr->ifr_metric = 0; return 0;
    case SIOCGIFTXQLEN: ifr->ifr_qlen = 1000; return 0;
    case SIOCGIFHWADDR:
        memset(&ifr->ifr_hwaddr, 0, sizeof ifr->ifr_hwaddr);
        ifr->ifr_hwaddr.sa_family = 1; /* ARPHRD_ETHER */
        return 0;
    default: errno = ENODEV; return -1;
    }
}

int ioctl(int fd, unsigned long req, ...) {
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!real_ioctl_p) real_ioctl_p = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
    if (req != SIOCGIFCONF && !names_interface(req)) return real_ioctl_p(fd, req, arg);
    view_init();
    if (!view_on || arg == NULL) return real_ioctl_p(fd, req, arg);
    if (req == SIOCGIFCONF) {
        struct ifconf *ifc = arg;
        int room = ifc->ifc_len;
        int rc = real_ioctl_p(fd, req, arg);
        if (rc != 0 || ifc->ifc_buf == NULL) return rc;
        const char *hif = host_if_name();
        int n = ifc->ifc_len / (int)sizeof(struct ifreq), k = 0, shown = 0;
        for (int i = 0; i < n; i++) {
            struct ifreq r = ifc->ifc_req[i];
            int loop = r.ifr_addr.sa_family == AF_INET && is_loopback_v4(&r.ifr_addr);
            int primary = !loop && !shown && hif[0] && strncmp(r.ifr_name, hif, IFNAMSIZ) == 0;
            if (!loop && !primary) continue;
            if (primary) {
                shown = 1;
                memset(r.ifr_name, 0, IFNAMSIZ);
                strcpy(r.ifr_name, POD_IF);
                if (r.ifr_addr.sa_family == AF_INET) set_v4(&r.ifr_addr, pod_ip);
            }
            ifc->ifc_req[k++] = r;
        }
        if (!hif[0] && (k + 1) * (int)sizeof(struct ifreq) <= room) {
            struct ifreq *r = &ifc->ifc_req[k++];
            memset(r, 0, sizeof *r);
            strcpy(r->ifr_name, POD_IF);
            set_v4(&r->ifr_addr, pod_ip);
        }
        ifc->ifc_len = k * (int)sizeof(struct ifreq);
        return rc;
    }
    struct ifreq *ifr = arg;
    int rc;
    if (strncmp(ifr->ifr_name, POD_IF, IFNAMSIZ) == 0) {
        const char *hif = host_if_name();
        if (!hif[0]) return made_up_eth0(req, ifr);
        strncpy(ifr->ifr_name, hif, IFNAMSIZ); /* the machine's interface behind eth0 */
        rc = real_ioctl_p(fd, req, arg);
        memset(ifr->ifr_name, 0, IFNAMSIZ);
        strcpy(ifr->ifr_name, POD_IF);
    } else {
        rc = real_ioctl_p(fd, req, arg);
    }
    if (rc != 0 || (req != SIOCGIFADDR && req != SIOCGIFNETMASK && req != SIOCGIFBRDADDR)) return rc;
    struct ifreq probe;
    memcpy(&probe, ifr, sizeof probe);
    if (strncmp(probe.ifr_name, POD_IF, IFNAMSIZ) == 0) strncpy(probe.ifr_name, host_if_name(), IFNAMSIZ);
    if (real_ioctl_p(fd, SIOCGIFFLAGS, &probe) != 0 || (probe.ifr_flags & IFF_LOOPBACK)) return rc;
    if (req == SIOCGIFADDR) set_v4(&ifr->ifr_addr, pod_ip);
    else if (req == SIOCGIFNETMASK) set_v4(&ifr->ifr_netmask, pod_mask);
    else set_v4(&ifr->ifr_broadaddr, pod_broadcast());
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
