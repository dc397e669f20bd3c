for name, nr, args in [
    ("ptrace(TRACEME)", 101, (0, 0, 0, 0)),
    ("bpf", 321, (0, 0, 0)),
    ("perf_event_open", 298, (0, 0, -1, -1, 0)),
    ("keyctl", 250, (0, 0, 0)),
    ("add_key", 248, (0, 0, 0, 0, 0)),
    ("init_module", 175, (0, 0, 0)),
    ("finit_module", 313, (0, 0, 0)),
    ("io_uring_setup", 425, (8, 0)),
    ("userfaultfd", 323, (0,)),
    ("kexec_load", 246, (0, 0, 0, 0)),
    ("open_by_handle_at", 304, (0, 0, 0)),
    ("process_vm_readv", 310, (1, 0, 0, 0, 0, 0)),
    ("personality(READ_IMPLIES_EXEC)", 135, (0x0400000,)),
]:
    r, e = syscall(nr, *args)
    report(r >= 0 or e not in (errno.EPERM, errno.ENOSYS), "%s: r=%d errno %d" % (name, r, e))

# The same calls through the x32 ABI (x86_64 arch, bit 30 set in the number): the deny-list
# names x86_64 numbers, so only a filter that denies x32 as a whole stops them on a kernel
# with x32 enabled. EPERM is the filter's verdict; ENOSYS would only say that this kernel
# has no x32 (the filter let it through), so it counts as an escape here.
X32 = 0x40000000
for name, nr, args in [
    ("x32 mount", 165, (0, 0, 0, 0, 0)),
    ("x32 unshare(CLONE_NEWUSER)", 272, (0x10000000,)),
    ("x32 bpf", 321, (0, 0, 0)),
    ("x32 keyctl", 250, (0, 0, 0)),
    ("x32 io_uring_setup", 425, (8, 0)),
    ("x32 ptrace(TRACEME)", 521, (0, 0, 0, 0)),
]:
    r, e = syscall(X32 | nr, *args)
    report(r >= 0 or e != errno.EPERM, "%s: r=%d errno %d" % (name, r, e))
