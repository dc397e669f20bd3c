use cleanroom_backend::{linux::LinuxBackend, Backend, ProcessSpec, SandboxSpec};
use tokio::io::AsyncReadExt;

#[tokio::test]
async fn smoke() {
    let dir = tempfile::tempdir().unwrap();
    let b = LinuxBackend::new(dir.path().join("sbx"), env!("CARGO_BIN_EXE_cleanroom").into()).unwrap();
    let t = std::time::Instant::now();
    let p = b.provision(&SandboxSpec { sandbox_id: "sbx_test".into(), hostname: "cr-test".into() }).await.unwrap();
    eprintln!("provisioned in {:?}: {:?}", t.elapsed(), p);
    let mut h = b.spawn("sbx_test", ProcessSpec { argv: vec!["sh".into(), "-c".into(), "echo hi; ls /proc | head -30; hostname; ip a 2>&1 || cat /proc/net/dev; ls /; cat /etc/shadow; echo err >&2; exit 3".into()], env: vec![("PATH".into(), "/usr/bin:/bin".into())], cwd: "/workspace".into(), stdin: false }).await.unwrap();
    let mut out = String::new();
    h.stdout.read_to_string(&mut out).await.unwrap();
    let mut err = String::new();
    h.stderr.read_to_string(&mut err).await.unwrap();
    let st = h.exit.await.unwrap();
    eprintln!("out={out}\nerr={err}\nstatus={st:?}");
    b.terminate("sbx_test").await.unwrap();
}
