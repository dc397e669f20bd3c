# argv: <host pid of the server>
server_pid = int(sys.argv[1])
for p in ["/dev/kvm", "/dev/mem", "/dev/kmsg", "/dev/vda", "/dev/sda", "/dev/port"]:
    try:
        os.open(p, os.O_RDWR)
        report(True, "open " + p)
    except OSError as e:
        report(False, "open %s: %s" % (p, e))
try:
    os.kill(server_pid, 0)
    cmd = open("/proc/%d/cmdline" % server_pid, "rb").read()
    report(b"serve" in cmd, "signal the host server (pid %d)" % server_pid)
except OSError as e:
    report(False, "signal the host server: %s" % e)
report(libc.sethostname(b"evil", 4) == 0, "sethostname: errno %d" % ctypes.get_errno())
ts = ctypes.create_string_buffer(16)
r, e = syscall(227, 0, ctypes.addressof(ts))
report(r == 0, "clock_settime: errno %d" % e)
r, e = syscall(164, ctypes.addressof(ts), 0)
report(r == 0, "settimeofday: errno %d" % e)
r, e = syscall(169, 0xFEE1DEAD, 672274793, 0x4321FEDC, 0)
report(r == 0, "reboot: errno %d" % e)
