"""The machine's ceiling: a C epoll server, compiled at run time with ``cc``, that frames
Kafka requests and answers each with one canned response (its correlation id patched in).
No Python at all: what the generator and the kernel's loopback allow on this machine.

    CompiledCeiling(port, response_frame)  (from bench.steady)

``start`` compiles it into a temporary directory (``cc -O2``) and runs it; the response is
given as the hex of a whole response frame (size prefix included, correlation id 0), so
the bench chooses which API it stands for. Every frame read in one ``read`` is answered
in one ``write``, as the daemon does.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = r"""
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <fcntl.h>

#define MAXC 4096
#define BUF (1 << 20)

typedef struct { int fd; unsigned char *in; size_t have; } conn_t;

static unsigned char *resp; static size_t resp_len;

static int hexval(char c) {
    return c >= 'a' ? c - 'a' + 10 : (c >= 'A' ? c - 'A' + 10 : c - '0');
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: PORT HEX\n"); return 2; }
    int port = atoi(argv[1]);
    size_t hl = strlen(argv[2]);
    resp_len = hl / 2; resp = malloc(resp_len);
    for (size_t i = 0; i < resp_len; i++)
        resp[i] = (unsigned char)(hexval(argv[2][2 * i]) << 4 | hexval(argv[2][2 * i + 1]));
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a; memset(&a, 0, sizeof a);
    a.sin_family = AF_INET; a.sin_port = htons(port); a.sin_addr.s_addr = htonl(0x7f000001);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096)) {
        perror("listen");
        return 1;
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    unsigned char *out = malloc(BUF * 4);
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            conn_t *c = evs[i].data.ptr;
            if (c == NULL) {
                int fd = accept(ls, NULL, NULL);
                if (fd < 0) continue;
                fcntl(fd, F_SETFL, O_NONBLOCK);
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                c = calloc(1, sizeof *c); c->fd = fd; c->in = malloc(BUF);
                struct epoll_event e2 = {.events = EPOLLIN, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e2);
                continue;
            }
            ssize_t r = read(c->fd, c->in + c->have, BUF - c->have);
            if (r <= 0) {
                if (r < 0 && errno == EAGAIN) continue;
                close(c->fd); free(c->in); free(c); continue;
            }
            c->have += (size_t)r;
            size_t at = 0, o = 0;
            while (c->have - at >= 4) {
                unsigned char *p = c->in + at;
                size_t size = (size_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
                if (c->have - at - 4 < size) break;
                memcpy(out + o, resp, resp_len);
                memcpy(out + o + 4, c->in + at + 8, 4);  /* the correlation id */
                o += resp_len; at += 4 + size;
            }
            memmove(c->in, c->in + at, c->have - at); c->have -= at;
            size_t w = 0;
            while (w < o) {
                ssize_t k = write(c->fd, out + w, o - w);
                if (k < 0) { if (errno == EAGAIN) continue; break; }
                w += (size_t)k;
            }
        }
    }
}
"""


def compile_ceiling(directory: Path) -> Path | None:
    """The server's binary, compiled in ``directory``; None if there is no ``cc``."""
    cc = shutil.which("cc")
    if cc is None:
        return None
    source = directory / "ceiling.c"
    source.write_text(SOURCE)
    binary = directory / "ceiling"
    subprocess.run([cc, "-O2", "-o", str(binary), str(source)], check=True)
    return binary


class CompiledCeiling:
    """The C ceiling, compiled and started; ``stop`` ends it and removes the build."""

    def __init__(self, port: int, response: bytes) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="ceiling-c-")
        binary = compile_ceiling(Path(self._dir.name))
        if binary is None:
            raise FileNotFoundError("cc")
        self.port = port
        self.proc = subprocess.Popen(
            [str(binary), str(port), response.hex()],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._dir.cleanup()
