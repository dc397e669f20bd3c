# Shared by every attack: raw syscalls through ctypes, and a one-line verdict per attempt.
import ctypes, errno, os, socket, sys

libc = ctypes.CDLL(None, use_errno=True)


def syscall(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    return r, ctypes.get_errno()


def report(escaped, what):
    print(("ESCAPED: " if escaped else "blocked: ") + what, flush=True)
