# argv: <server state dir> <server socket>
state, sock = sys.argv[1], sys.argv[2]
for p in [state + "/state.db", sock, "/etc/shadow", "/etc/gshadow", "/root/.bash_history", "/proc/1/environ"]:
    try:
        data = open(p, "rb").read()
        report(len(data) > 0, "read " + p)
    except OSError as e:
        report(False, "read %s: %s" % (p, e))
try:
    c = socket.socket(socket.AF_UNIX)
    c.connect(sock)
    report(True, "connect to the server socket")
except OSError as e:
    report(False, "connect to the server socket: %s" % e)
