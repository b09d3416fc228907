/* SPDX-License-Identifier: MIT */
/* Numeric TCP listen addresses ("A.B.C.D:PORT", "[IPV6]:PORT"), without name resolution. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "listen-address.h"
#include "util.h"

int metrics_parse_listen(const char *address, struct sockaddr_storage *ret, socklen_t *ret_len) {
        struct sockaddr_storage ss = {};
        char host[INET6_ADDRSTRLEN + 1];
        const char *colon, *port_str;
        uint64_t port;
        size_t host_len;
        socklen_t len;
        bool v6 = false;

        if (!address)
                return -EINVAL;

        if (address[0] == '[') {
                const char *bracket = strchr(address, ']');

                if (!bracket || bracket[1] != ':')
                        return -EINVAL;
                address++;
                host_len = (size_t) (bracket - address);
                port_str = bracket + 2;
                v6 = true;
        } else {
                colon = strrchr(address, ':');
                if (!colon || strchr(address, ':') != colon)
                        return -EINVAL;
                host_len = (size_t) (colon - address);
                port_str = colon + 1;
        }

        if (host_len == 0 || host_len >= sizeof(host))
                return -EINVAL;
        memcpy(host, address, host_len);
        host[host_len] = 0;

        if (port_str[0] < '0' || port_str[0] > '9' || safe_atou64(port_str, &port) < 0 || port > 65535)
                return -EINVAL;

        {
                struct sockaddr_in6 *sa6 = (struct sockaddr_in6 *) &ss;
                struct sockaddr_in *sa4 = (struct sockaddr_in *) &ss;

                if (inet_pton(v6 ? AF_INET6 : AF_INET, host, v6 ? (void *) &sa6->sin6_addr : (void *) &sa4->sin_addr) != 1)
                        return -EINVAL;
                /* sin_family and sin_port sit where sin6_family and sin6_port do. */
                ss.ss_family = v6 ? AF_INET6 : AF_INET;
                sa4->sin_port = htons((uint16_t) port);
                len = v6 ? sizeof(*sa6) : sizeof(*sa4);
        }

        *ret = ss;
        *ret_len = len;
        return 0;
}
