for p in ["/proc/1/exe", "/proc/1/root", "/proc/1/cwd"]:
    try:
        os.readlink(p)
        report(True, "readlink " + p)
    except OSError as e:
        report(False, "readlink %s: %s" % (p, e))
for p in ["/proc/1/exe", "/proc/self/exe"]:
    try:
        os.open(p, os.O_WRONLY)
        report(True, "open %s for writing" % p)
    except OSError as e:
        report(False, "open %s for writing: %s" % (p, e))
extra = [int(f) for f in os.listdir("/proc/self/fd") if int(f) > 2]
leaked = [f for f in extra if os.path.exists("/proc/self/fd/%d" % f) and not os.readlink("/proc/self/fd/%d" % f).startswith("/proc")]
report(bool(leaked), "inherited fds beyond stdio: %r" % leaked)
st = open("/proc/self/status").read()
caps = [l for l in st.splitlines() if l.startswith(("CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh"))]
report(any(not l.endswith("0000000000000000") for l in caps), "capabilities: %r" % caps)
report("NoNewPrivs:\t1" not in st, "no_new_privs set")
