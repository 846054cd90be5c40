/* The network shim: wildcard binds and outgoing connections on the pod IP, low ports shifted.
 * Compiled at run time into an LD_PRELOAD library; netshim.py says what and why. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
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

/* A TCP socket bound on a pod address may take a port still in TIME_WAIT from an earlier pod
   that had the address (a rerun's server on its fixed port), as SO_REUSEADDR allows; two
   listeners on one address and port still conflict. UDP sockets are left alone. */
static void reuse_address(int fd) {
    int saved = errno, type = 0, on = 1;
    socklen_t tlen = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 && type == SOCK_STREAM)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    errno = saved;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    sock_fn real_bind = real("bind", &real_bind_p);
    shim_init();
    if (pod_ip_set && addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in sin;
        memcpy(&sin, addr, sizeof sin);
        int wildcard = sin.sin_addr.s_addr == htonl(INADDR_ANY);
        if (wildcard) sin.sin_addr = pod_ip;
        if (in_pod_net(&sin.sin_addr)) {
            sin.sin_port = shift(sin.sin_port);
            if (sin.sin_port) reuse_address(fd);
        }
        int rc = real_bind(fd, (struct sockaddr *)&sin, sizeof sin);
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
        if (is_v4mapped(&sin6.sin6_addr)) {
            struct in_addr v4;
            memcpy(&v4, &sin6.sin6_addr.s6_addr[12], 4);
            if (in_pod_net(&v4)) {
                sin6.sin6_port = shift(sin6.sin6_port);
                if (sin6.sin6_port) reuse_address(fd);
            }
        }
        int rc = real_bind(fd, (struct sockaddr *)&sin6, sizeof sin6);
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
