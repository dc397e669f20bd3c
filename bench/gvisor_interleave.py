"""Interleaved one-shot vs usual-start gVisor exec vs bare `runsc do true` (docs/runtimes.md,
"One runsc invocation for a one-shot `exec`"). Rounds alternate the three, so load drift
hits all alike. Needs a running server: CLEANROOM_HOST (default unix:///tmp/dbg2/s.sock)
and CLEANROOM_BIN (default /tmp/cleanroom-dbg); root, runsc on PATH."""
import subprocess, time, os, statistics, shutil, tempfile
B=os.environ.get("CLEANROOM_BIN", "/tmp/cleanroom-dbg")
env=dict(os.environ, CLEANROOM_HOST=os.environ.get("CLEANROOM_HOST", "unix:///tmp/dbg2/s.sock"))
runsc=shutil.which("runsc"); root=tempfile.mkdtemp()
def t(cmd, **kw):
    s=time.perf_counter(); r=subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, **kw); return (time.perf_counter()-s)*1000, r
one, usual, do = [], [], []
for i in range(23):
    a,_=t([B,"exec","-n","--runtime","gvisor","--","true"], env=env)
    b,r=t([B,"exec","-n","--keep","--runtime","gvisor","--","true"], env=env)
    sid=next((w for w in r.stderr.decode().split() if w.startswith("sbx_")),"")
    subprocess.run([B,"sandbox","rm",sid], env=env, capture_output=True)
    c,_=t([runsc,"--root",root,"--network","none","do","true"])
    if i>=3: one.append(a); usual.append(b); do.append(c)
m=statistics.median
print(f"one-shot {m(one):.0f} usual {m(usual):.0f} do {m(do):.0f} one/do {m(one)/m(do):.2f} usual/do {m(usual)/m(do):.2f} one/usual {m(one)/m(usual):.2f}")
wins=sum(1 for x,y in zip(one,usual) if x<y); print("pairs one-shot faster:", wins, "of", len(one))
shutil.rmtree(root, ignore_errors=True)
