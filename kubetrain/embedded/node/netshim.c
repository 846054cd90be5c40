/* The network shim: wildcard binds and outgoing connections on the pod IP, low ports shifted.
 * Compiled at run time into an LD_PRELOAD library; netshim.py says what and why. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*sock_fn)(int, const struct sockaddr *, socklen_t);

static struct in_addr pod_ip;
static int initialised = 0, pod_ip_set = 0;
static int port_offset = 0, port_limit = 0;
static struct in_addr net_addr, net_mask;

static sock_fn real(const char *name, sock_fn *slot) {
    if (!*slot) *slot = (sock_fn)dlsym(RTLD_NEXT, name);
    return *slot;
}
static sock_fn real_bind_p, real_connect_p;

static void shim_init(void) {
    if (initialised) return;
    const char *ip = getenv("KUBETRAIN_POD_IP");
    pod_ip_set = ip != NULL && inet_pton(AF_INET, ip, &pod_ip) == 1;
    const char *off = getenv("KUBETRAIN_PORT_OFFSET");
    const char *lim = getenv("KUBETRAIN_PORT_OFFSET_BELOW");
    port_offset = off ? atoi(off) : 0;
    port_limit = lim ? atoi(lim) : 0;
    net_addr.s_addr = 0;
    net_mask.s_addr = 0xffffffffu;
    const char *cidr = getenv("KUBETRAIN_POD_CIDR");
    if (cidr) {
        char buf[40];
        strncpy(buf, cidr, sizeof buf - 1);
        buf[sizeof buf - 1] = 0;
        char *slash = strchr(buf, '/');
        int bits = 32;
        if (slash) { *slash = 0; bits = atoi(slash + 1); }
        if (inet_pton(AF_INET, buf, &net_addr) == 1 && bits >= 0 && bits <= 32)
            net_mask.s_addr = bits == 0 ? 0 : htonl(0xffffffffu << (32 - bits));
    }
    initialised = 1;
}

static in_port_t shift(in_port_t port_be) {
    unsigned p = ntohs(port_be);
    if (port_offset > 0 && p > 0 && (int)p < port_limit) return htons((in_port_t)(p + port_offset));
    return port_be;
}

static int in_pod_net(const struct in_addr *a) {
    return (a->s_addr & net_mask.s_addr) == (net_addr.s_addr & net_mask.s_addr);
}

/* Ports this process bound on the wildcard address (rewritten to the pod IP): in a real pod,
   127.0.0.1:p reaches them, so connect() to loopback on one of these ports goes to the pod IP. */
#define MAX_WILDCARD_PORTS 256
static in_port_t wildcard_ports[MAX_WILDCARD_PORTS];
static int n_wildcard_ports = 0;

static void remember_wildcard(in_port_t port_be) {
    for (int i = 0; i < n_wildcard_ports; i++) if (wildcard_ports[i] == port_be) return;
    if (n_wildcard_ports < MAX_WILDCARD_PORTS) wildcard_ports[n_wildcard_ports++] = port_be;
}

static int bound_on_wildcard(in_port_t port_be) {
    for (int i = 0; i < n_wildcard_ports; i++) if (wildcard_ports[i] == port_be) return 1;
    return 0;
}

static void note_bound_port(int fd, int family) {
    int saved = errno;
    if (family == AF_INET) {
        struct sockaddr_in local;
        socklen_t llen = sizeof local;
        if (getsockname(fd, (struct sockaddr *)&local, &llen) == 0) remember_wildcard(local.sin_port);
    } else {
        struct sockaddr_in6 local;
        socklen_t llen = sizeof local;
        if (getsockname(fd, (struct sockaddr *)&local, &llen) == 0) remember_wildcard(local.sin6_port);
    }
    errno = saved;
}

static int is_v4mapped(const struct in6_addr *a) {
    static const unsigned char prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(a->s6_addr, prefix, 12) == 0;
}

static void set_v4mapped(struct in6_addr *a, const struct in_addr *v4) {
    memset(a, 0, sizeof *a);
    a->s6_addr[10] = 0xff;
    a->s6_addr[11] = 0xff;
    memcpy(&a->s6_addr[12], v4, 4);
}

static int is_tcp(int fd) {
    int type = 0;
    socklen_t tlen = sizeof type;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 && type == SOCK_STREAM;
}

static int set_reuse(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
}

/* Whether /proc/net/<table> lists `local` (its "%08X:%04X" form) only in TIME_WAIT (state 06):
   -1 when some entry is in another state, 1 when all are TIME_WAIT, 0 when none is listed. */
static int time_wait_only_in(const char *table, const char *local) {
    char path[32], line[512], addr[80], state[8];
    snprintf(path, sizeof path, "/proc/net/%s", table);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int found = 0;
    if (fgets(line, sizeof line, f)) {  /* the header */
        while (fgets(line, sizeof line, f)) {
            if (sscanf(line, "%*s %79s %*s %7s", addr, state) != 2) continue;
            const char *colon = strrchr(addr, ':');
            size_t host_len = colon ? (size_t)(colon - addr) : 0;
            /* tcp6 lists v4-mapped addresses as 0000000000000000FFFF0000<v4>: compare the tail */
            size_t want_len = strlen(local);
            size_t have_len = strlen(addr);
            if (host_len == 0 || have_len < want_len || strcmp(addr + have_len - want_len, local) != 0)
                continue;
            if (strcmp(state, "06") != 0) { fclose(f); return -1; }
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* Why a fixed-port bind that failed may take the port after all: every socket left on it is one
   of the pod's own finished connections in TIME_WAIT (a rerun's server, whose last run's
   connections closed from its side), which SO_REUSEADDR lets a new listener share. A socket that
   is merely bound (not listening or connected) is not listed at all, so a sibling racing for the
   same port still loses at bind(), as on a real node: setting SO_REUSEADDR on every bind let two
   ranks bind one port, and the second then failed in listen() (OpenMPI's btl_tcp). */
static int held_only_by_time_wait(in_addr_t addr_be, in_port_t port_be) {
    char local[32];
    snprintf(local, sizeof local, "%08X:%04X", (unsigned)addr_be, (unsigned)ntohs(port_be));
    int v4 = time_wait_only_in("tcp", local), v6 = time_wait_only_in("tcp6", local);
    return v4 >= 0 && v6 >= 0 && (v4 || v6);
}

/* bind(), retried with SO_REUSEADDR when only TIME_WAIT connections hold the fixed port. */
static int bind_pod_address(int fd, struct sockaddr *addr, socklen_t len, in_addr_t ip_be, in_port_t port_be) {
    sock_fn real_bind = real("bind", &real_bind_p);
    int rc = real_bind(fd, addr, len);
    if (rc == 0 || errno != EADDRINUSE || port_be == 0 || !is_tcp(fd)) return rc;
    int saved = errno, reuse = 0;
    socklen_t rlen = sizeof reuse;
    if (getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, &rlen) != 0 || reuse
        || !held_only_by_time_wait(ip_be, port_be) || set_reuse(fd) != 0) {
        errno = saved;
        return rc;
    }
    return real_bind(fd, addr, len);
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    sock_fn real_bind = real("bind", &real_bind_p);
    shim_init();
    if (pod_ip_set && addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in sin;
        memcpy(&sin, addr, sizeof sin);
        int wildcard = sin.sin_addr.s_addr == htonl(INADDR_ANY);
        if (wildcard) sin.sin_addr = pod_ip;
        int rc;
        if (in_pod_net(&sin.sin_addr)) {
            sin.sin_port = shift(sin.sin_port);
            rc = bind_pod_address(fd, (struct sockaddr *)&sin, sizeof sin, sin.sin_addr.s_addr, sin.sin_port);
        } else {
            rc = real_bind(fd, (struct sockaddr *)&sin, sizeof sin);
        }
        if (rc == 0 && wildcard) note_bound_port(fd, AF_INET);
        return rc;
    }
    if (pod_ip_set && addr && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 sin6;
        memcpy(&sin6, addr, sizeof sin6);
        int v6only = 0, wildcard = 0;
        socklen_t optlen = sizeof v6only;
        if (memcmp(&sin6.sin6_addr, &in6addr_any, sizeof(struct in6_addr)) == 0
            && getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &optlen) == 0 && !v6only) {
            set_v4mapped(&sin6.sin6_addr, &pod_ip);
            wildcard = 1;
        }
        struct in_addr v4;
        memcpy(&v4, &sin6.sin6_addr.s6_addr[12], 4);
        int rc;
        if (is_v4mapped(&sin6.sin6_addr) && in_pod_net(&v4)) {
            sin6.sin6_port = shift(sin6.sin6_port);
            rc = bind_pod_address(fd, (struct sockaddr *)&sin6, sizeof sin6, v4.s_addr, sin6.sin6_port);
        } else {
            rc = real_bind(fd, (struct sockaddr *)&sin6, sizeof sin6);
        }
        if (rc == 0 && wildcard) note_bound_port(fd, AF_INET6);
        return rc;
    }
    return real_bind(fd, addr, len);
}

static void bind_source(int fd, int family) {
    sock_fn real_bind = real("bind", &real_bind_p);
    int saved = errno;
    if (family == AF_INET) {
        struct sockaddr_in local;
        socklen_t llen = sizeof local;
        if (getsockname(fd, (struct sockaddr *)&local, &llen) == 0 && local.sin_port == 0) {
            struct sockaddr_in src;
            memset(&src, 0, sizeof src);
            src.sin_family = AF_INET;
            src.sin_addr = pod_ip;
            real_bind(fd, (struct sockaddr *)&src, sizeof src);
        }
    } else {
        struct sockaddr_in6 local;
        socklen_t llen = sizeof local;
        if (getsockname(fd, (struct sockaddr *)&local, &llen) == 0 && local.sin6_port == 0) {
            struct sockaddr_in6 src;
            memset(&src, 0, sizeof src);
            src.sin6_family = AF_INET6;
            set_v4mapped(&src.sin6_addr, &pod_ip);
            real_bind(fd, (struct sockaddr *)&src, sizeof src);
        }
    }
    errno = saved;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    sock_fn real_connect = real("connect", &real_connect_p);
    shim_init();
    if (pod_ip_set && addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in sin;
        memcpy(&sin, addr, sizeof sin);
        if (sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && bound_on_wildcard(sin.sin_port))
            sin.sin_addr = pod_ip;  /* our own wildcard listener, which lives on the pod IP */
        if (in_pod_net(&sin.sin_addr)) {
            sin.sin_port = shift(sin.sin_port);
            bind_source(fd, AF_INET);
            return real_connect(fd, (struct sockaddr *)&sin, sizeof sin);
        }
    }
    if (pod_ip_set && addr && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 sin6;
        memcpy(&sin6, addr, sizeof sin6);
        struct in_addr v4;
        memcpy(&v4, &sin6.sin6_addr.s6_addr[12], 4);
        if (bound_on_wildcard(sin6.sin6_port)
            && (IN6_IS_ADDR_LOOPBACK(&sin6.sin6_addr)
                || (is_v4mapped(&sin6.sin6_addr) && v4.s_addr == htonl(INADDR_LOOPBACK)))) {
            set_v4mapped(&sin6.sin6_addr, &pod_ip);  /* [::1]:p or [::ffff:127.0.0.1]:p */
            memcpy(&v4, &pod_ip, 4);
        }
        if (is_v4mapped(&sin6.sin6_addr) && in_pod_net(&v4)) {
            sin6.sin6_port = shift(sin6.sin6_port);
            bind_source(fd, AF_INET6);
            return real_connect(fd, (struct sockaddr *)&sin6, sizeof sin6);
        }
    }
    return real_connect(fd, addr, len);
}

/* A listener on a pod address gets SO_REUSEADDR as it starts listening (when no other socket can
   still bind its port): its accepted connections inherit it, so their TIME_WAITs, left when the
   server closes first, do not keep a rerun's server (same pod address) off the port. */
int listen(int fd, int backlog) {
    static int (*real_listen)(int, int);
    if (!real_listen) real_listen = (int (*)(int, int))dlsym(RTLD_NEXT, "listen");
    shim_init();
    if (pod_ip_set && is_tcp(fd)) {
        int saved = errno;
        struct sockaddr_in6 local;
        socklen_t llen = sizeof local;
        struct in_addr v4 = {0};
        if (getsockname(fd, (struct sockaddr *)&local, &llen) == 0) {
            if (local.sin6_family == AF_INET) v4 = ((struct sockaddr_in *)&local)->sin_addr;
            else if (local.sin6_family == AF_INET6 && is_v4mapped(&local.sin6_addr))
                memcpy(&v4, &local.sin6_addr.s6_addr[12], 4);
            if (v4.s_addr && in_pod_net(&v4)) set_reuse(fd);
        }
        errno = saved;
    }
    return real_listen(fd, backlog);
}
