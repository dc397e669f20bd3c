# A setuid-root binary must not raise privileges: every mount is nosuid and no_new_privs is set.
setuid = [p for p in ("/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount", "/usr/bin/newgrp", "/usr/bin/chsh")
          if os.path.exists(p) and os.stat(p).st_mode & 0o4000]
report(not setuid, "setuid binaries present to try: %r" % setuid)
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    mountpoint, opts = fields[4], fields[5].split(",")
    if "nosuid" not in opts:
        report(True, "mount without nosuid: %s" % mountpoint)
        break
else:
    report(False, "every mount is nosuid")
pid = os.fork()
if pid == 0:
    os.execv(setuid[0], [setuid[0], "--help"]) if setuid else os._exit(0)
_, status = os.waitpid(pid, 0)
report(os.geteuid() != 0 or "NoNewPrivs:\t1" not in open("/proc/self/status").read(), "no_new_privs for setuid exec")
