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
