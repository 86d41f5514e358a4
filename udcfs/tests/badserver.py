#!/usr/bin/env python3
"""badserver.py MOUNTPORT NFSPORT MODE [LOG]: a fake NFSv3 server that sends garbage.

For nfs-checks.sh ("a server that sends garbage"): nfs-ganesha cannot be made to send a
malformed reply, so this small server (python3's standard library only) does. It listens on
127.0.0.1 only, on two TCP ports: MOUNT v3 and NFS v3, ONC RPC with record marking
(RFC 5531, 1813). libnfs reaches it with

    nfs://127.0.0.1/export?version=3&nfsport=NFSPORT&mountport=MOUNTPORT

and then asks no portmapper. It serves an export of one directory, the root, whose listing
(READDIRPLUS and READDIR) MODE chooses:

    good   two files, "alpha" and "beta": the control
    slash  a file "ok", then one named "a/b"
    loop   cookies that lead round a cycle: a(1) b(2) c(3) d(1) b(2) c(3) d(1) ..., never eof
    short  a READDIRPLUS reply cut in the middle of its second entry (the record length is
           that of the cut body: the RPC layer delivers it, XDR decoding fails)
    nul    a file "ok", then one named "x<NUL>y". Not checked by nfs-checks.sh: libnfs 4.0 hands
           names over as C strings without their XDR length, so udcfs sees (and lists) "x"

SIGUSR1 switches to `good`, with the root's attributes unchanged: a client that kept anything
from a bad reply would still serve it. LOOKUP finds the names of the current listing (regular
files), NOENT otherwise. Every call is logged to LOG (or stderr) as "PROGRAM PROC".
"""
import signal
import socket
import socketserver
import struct
import sys
import threading

MOUNT_PROG, NFS_PROG = 100005, 100003
ROOT_FH = b"badserver-root\0\0"
u32 = lambda v: struct.pack(">I", v)
u64 = lambda v: struct.pack(">Q", v)


def opaque(b):
    return u32(len(b)) + b + b"\0" * (-len(b) % 4)


def fattr(fileid, isdir):
    # type mode nlink uid gid size used rdev fsid fileid atime mtime ctime (fixed times)
    return (u32(2 if isdir else 1) + u32(0o755 if isdir else 0o644) + u32(2 if isdir else 1)
            + u32(0) + u32(0) + u64(4096 if isdir else 0) + u64(0) + u32(0) + u32(0)
            + u64(1) + u64(fileid) + (u32(1700000000) + u32(0)) * 3)


def post_op(fileid, isdir):
    return u32(1) + fattr(fileid, isdir)


ROOT_ATTR = post_op(1, True)
FILEIDS = {"alpha": 11, "beta": 12, "ok": 21, "a/b": 22, "x\0y": 23,
           "a": 31, "b": 32, "c": 33, "d": 34}
LOOP = [("a", 1), ("b", 2), ("c", 3), ("d", 1)]  # after cookie k: the entries that follow


def fh_of(name):
    return b"badserver-f%04d" % FILEIDS[name]


def listing(mode, cookie):
    """(entries [(name, cookie)], eof) for a READDIR(PLUS) at `cookie`."""
    if mode == "loop":
        i = {0: 0, 1: 1, 2: 2, 3: 3}.get(cookie, 1)
        return [LOOP[i], LOOP[i % 3 + 1]], False
    names = {"good": ["alpha", "beta"], "short": ["alpha", "beta"], "slash": ["ok", "a/b"],
             "nul": ["ok", "x\0y"]}[mode]
    entries = [(n, i + 1) for i, n in enumerate(names)]
    return [e for e in entries if e[1] > cookie], True


class Handler(socketserver.BaseRequestHandler):
    def recv_exact(self, n):
        b = b""
        while len(b) < n:
            c = self.request.recv(n - len(b))
            if not c:
                raise EOFError
            b += c
        return b

    def handle(self):
        try:
            while True:
                rec = b""
                while True:  # record marking: fragments until the last one
                    (mark,) = struct.unpack(">I", self.recv_exact(4))
                    rec += self.recv_exact(mark & 0x7FFFFFFF)
                    if mark & 0x80000000:
                        break
                reply = self.call(rec)
                if reply is not None:
                    self.request.sendall(u32(0x80000000 | len(reply)) + reply)
        except (EOFError, ConnectionError):
            pass

    def call(self, rec):
        xid, mtype, rpcvers, prog, vers, proc = struct.unpack(">6I", rec[:24])
        off = 24
        for _ in range(2):  # credentials and verifier: any flavor (AUTH_NONE, AUTH_SYS)
            _, n = struct.unpack(">2I", rec[off:off + 8])
            off += 8 + n + (-n % 4)
        args = rec[off:]
        head = u32(xid) + u32(1) + u32(0) + u32(0) + u32(0) + u32(0)  # REPLY ACCEPTED verf SUCCESS
        progname = {MOUNT_PROG: "MOUNT", NFS_PROG: "NFS"}.get(prog, str(prog))
        log("%s %s" % (progname, PROCS.get((prog, proc), proc)))
        if mtype != 0 or rpcvers != 2 or vers != 3 or prog != self.server.prog:
            return head[:-4] + u32(1)  # PROG_UNAVAIL
        body = (mount_proc if prog == MOUNT_PROG else nfs_proc)(proc, args)
        if body is None:
            return head[:-4] + u32(3)  # PROC_UNAVAIL
        return head + body


def mount_proc(proc, args):
    if proc in (0, 3, 4):  # NULL, UMNT, UMNTALL
        return b""
    if proc == 1:  # MNT: any path; the root handle and AUTH_SYS
        return u32(0) + opaque(ROOT_FH) + u32(1) + u32(1)
    if proc == 5:  # EXPORT (libnfs asks it at mount): "/export", open to all
        return u32(1) + opaque(b"/export") + u32(0) + u32(0)
    return None


def nfs_proc(proc, args):
    mode = STATE["mode"]
    if proc == 0:  # NULL
        return b""
    if proc == 1:  # GETATTR
        fh = args[4:4 + struct.unpack(">I", args[:4])[0]]
        if fh == ROOT_FH:
            return u32(0) + fattr(1, True)
        name = next((n for n in FILEIDS if fh_of(n) == fh), None)
        return u32(0) + fattr(FILEIDS[name], False) if name else u32(70)  # STALE
    if proc == 3:  # LOOKUP (in the root)
        n = struct.unpack(">I", args[:4])[0]
        off = 4 + n + (-n % 4)
        ln = struct.unpack(">I", args[off:off + 4])[0]
        name = args[off + 4:off + 4 + ln].decode(errors="replace")
        names = "abcd" if mode == "loop" else [e[0] for e in listing(mode, 0)[0]]
        if name not in names or "/" in name:
            return u32(2) + ROOT_ATTR  # NOENT
        return u32(0) + opaque(fh_of(name)) + post_op(FILEIDS[name], False) + ROOT_ATTR
    if proc == 4:  # ACCESS: all asked for
        return u32(0) + ROOT_ATTR + args[-4:]
    if proc in (16, 17):  # READDIR, READDIRPLUS
        n = struct.unpack(">I", args[:4])[0]
        (cookie,) = struct.unpack(">Q", args[4 + n + (-n % 4):][:8])
        entries, eof = listing(mode, cookie)
        out = u32(0) + ROOT_ATTR + b"\0" * 7 + b"\1"  # status, dir attributes, cookieverf
        for i, (name, c) in enumerate(entries):
            e = u32(1) + u64(FILEIDS[name]) + opaque(name.encode()) + u64(c)
            if proc == 17:
                e += post_op(FILEIDS[name], False) + u32(1) + opaque(fh_of(name))
            if mode == "short" and proc == 17 and i == 1:
                return out + e[:len(e) // 2]  # cut in the middle of the second entry
            out += e
        return out + u32(0) + u32(1 if eof else 0)
    if proc == 18:  # FSSTAT
        return u32(0) + ROOT_ATTR + u64(1 << 30) * 3 + u64(1000) * 3 + u32(0)
    if proc == 19:  # FSINFO: rtmax rtpref rtmult wtmax wtpref wtmult dtpref maxfilesize delta props
        return (u32(0) + ROOT_ATTR + u32(65536) * 2 + u32(4096) + u32(65536) * 2 + u32(4096)
                + u32(65536) + u64(1 << 40) + u32(0) + u32(1) + u32(0x1B))
    if proc == 20:  # PATHCONF: linkmax name_max no_trunc chown_restricted case_insens case_pres
        return u32(0) + ROOT_ATTR + u32(32000) + u32(255) + u32(1) + u32(1) + u32(0) + u32(1)
    return u32(10004)  # NFS3ERR_NOTSUPP: nothing else is needed


PROCS = {(MOUNT_PROG, 0): "NULL", (MOUNT_PROG, 1): "MNT", (MOUNT_PROG, 3): "UMNT",
         (MOUNT_PROG, 5): "EXPORT"}
PROCS.update({(NFS_PROG, p): n for p, n in enumerate(
    "NULL GETATTR SETATTR LOOKUP ACCESS READLINK READ WRITE CREATE MKDIR SYMLINK MKNOD REMOVE "
    "RMDIR RENAME LINK READDIR READDIRPLUS FSSTAT FSINFO PATHCONF COMMIT".split())})
STATE = {"mode": "good"}
LOCK = threading.Lock()
LOGF = sys.stderr


def log(line):
    with LOCK:
        LOGF.write(line + "\n")
        LOGF.flush()


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, port, prog):
        super().__init__(("127.0.0.1", port), Handler)
        self.prog = prog


def main():
    global LOGF
    if len(sys.argv) not in (4, 5) or sys.argv[3] not in ("good", "slash", "loop", "short", "nul"):
        sys.exit("usage: badserver.py MOUNTPORT NFSPORT good|slash|loop|short|nul [LOG]")
    STATE["mode"] = sys.argv[3]
    if len(sys.argv) == 5:
        LOGF = open(sys.argv[4], "a")
    servers = [Server(int(sys.argv[1]), MOUNT_PROG), Server(int(sys.argv[2]), NFS_PROG)]
    signal.signal(signal.SIGUSR1, lambda *_: STATE.update(mode="good") or log("mode good"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    log("listening: MOUNT 127.0.0.1:%s NFS 127.0.0.1:%s mode %s" % (*sys.argv[1:3], STATE["mode"]))
    servers[0].serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
