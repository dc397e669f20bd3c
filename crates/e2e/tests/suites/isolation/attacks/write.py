for p in ["/usr/evil", "/etc/evil", "/evil", "/bin/evil", "/proc/sys/kernel/hostname",
          "/proc/sys/vm/drop_caches", "/proc/self/oom_score_adj", "/sys/kernel/evil"]:
    try:
        with open(p, "w") as f:
            f.write("1")
        report(True, "write " + p)
    except OSError as e:
        report(False, "write %s: %s" % (p, e))
for p in ["/tmp/ok", "/workspace/ok", "/root/ok"]:
    with open(p, "w") as f:
        f.write("fine")
