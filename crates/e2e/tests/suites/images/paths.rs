//! Images cannot steer the sandbox setup onto the host: every path the setup creates,
//! writes or mounts on inside an image root (`/etc/resolv.conf`, `/run/cleanroom/*`, the
//! CA bundle, `/proc`, `/dev`, `/tmp`, `/root`, `/workspace`, `/home`, ...) may be a
//! symlink in the image — absolute to a host directory the test owns, relative climbing
//! out, dangling, chained. Real images from a loopback registry, a real server with a
//! secret (so the sandbox CA is installed too). Nothing may appear on the host; each
//! sandbox either works with the links confined to its root or is refused with
//! `image_unsupported`. Every test runs under both runtimes ([`both_runtimes!`]).

use cleanroom_e2e::oci::{busybox_layer, Layer, Registry};
use cleanroom_e2e::*;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const HOST_BUNDLE: &str = "HOST-BUNDLE-MUST-NOT-LEAK";

/// A host directory the image's links point at. World-writable like /tmp, so a write as
/// the sandbox's host uid would succeed and be seen.
struct Victim {
    tmp: tempfile::TempDir,
}

impl Victim {
    fn new() -> Victim {
        let tmp = tempfile::Builder::new()
            .prefix("cr-victim-")
            .tempdir_in("/tmp")
            .unwrap();
        let v = Victim { tmp };
        for d in ["", "etc", "certs", "run", "ssl", "ssl/certs"] {
            let p = v.tmp.path().join(d);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        for f in ["certs/ca-certificates.crt", "ssl/certs/ca-certificates.crt"] {
            std::fs::write(v.tmp.path().join(f), format!("{HOST_BUNDLE}\n")).unwrap();
        }
        v
    }
    fn path(&self) -> String {
        self.tmp.path().display().to_string()
    }
    /// Everything under the victim dir: path -> kind/content/mode.
    fn snapshot(&self) -> BTreeMap<String, String> {
        fn walk(dir: &Path, out: &mut BTreeMap<String, String>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                let m = std::fs::symlink_metadata(&p).unwrap();
                let desc = if m.is_dir() {
                    walk(&p, out);
                    format!("dir {:o}", m.permissions().mode())
                } else if m.file_type().is_symlink() {
                    format!("link {:?}", std::fs::read_link(&p).ok())
                } else {
                    format!(
                        "file {:o} {:?}",
                        m.permissions().mode(),
                        std::fs::read(&p).ok()
                    )
                };
                out.insert(p.display().to_string(), desc);
            }
        }
        let mut out = BTreeMap::new();
        walk(self.tmp.path(), &mut out);
        out
    }
}

/// `../` enough times to climb from any sandbox directory to the host's `/`.
fn up() -> String {
    "../".repeat(12)
}

struct Env {
    reg: Registry,
    server: Server,
    dir: tempfile::TempDir,
    rt: Runtime,
}

fn env(rt: Runtime) -> Env {
    let reg = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let secrets = write(&dir, "secrets", "TOKEN=image-paths-secret\n");
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = Server::start_with(&[
        "--insecure-registry",
        &reg.host(),
        "--secrets-file",
        &secrets,
    ]);
    Env {
        reg,
        server,
        dir,
        rt,
    }
}

/// The script every image sandbox runs: DNS points at the gateway, the CA is installed,
/// the writable dirs are the sandbox's own.
const PROBE: &str = "grep -q '^nameserver ' /etc/resolv.conf && echo dns-ok; \
     grep -c 'BEGIN CERTIFICATE' /run/cleanroom/sandbox-ca.crt; \
     cat /run/cleanroom/ca-bundle.crt; \
     touch /tmp/t /workspace/w /root/r && echo writable; \
     test -r /proc/self/status && echo proc-ok; test -c /dev/null && echo dev-ok";

/// Run `PROBE` in a sandbox rooted on an image made of busybox plus `layer`.
fn run_case(e: &Env, name: &str, layer: Vec<u8>) -> std::process::Output {
    let reference = e
        .reg
        .push_image(&format!("test/{name}"), &[busybox_layer(), layer]);
    let policy = write(
        &e.dir,
        &format!("{name}.yaml"),
        &format!(
            "version: 1\nsandbox:\n  image:\n    ref: {reference}\n  network:\n    allow:\n      - host: api.test\n  secrets:\n    TOKEN:\n      hosts: [api.test]\n"
        ),
    );
    e.server.run(&e.rt.args(
        1,
        &[
            "exec", "-n", "--policy", &policy, "--", "/bin/sh", "-c", PROBE,
        ],
    ))
}

/// Check one case: host untouched, and either a working, confined sandbox or a clean
/// `image_unsupported` refusal. Returns a failure description.
fn check(
    e: &Env,
    name: &str,
    case: &dyn Fn(&str, &str) -> Layer,
    must_work: bool,
) -> Option<String> {
    let victim = Victim::new();
    let t = victim.path();
    let rel_t = format!("{}{}", up(), t.trim_start_matches('/'));
    let layer = case(&t, &rel_t).gz();
    let before = victim.snapshot();
    let o = run_case(e, name, layer);
    let (out, err) = (stdout(&o), stderr(&o));
    let after = victim.snapshot();
    if before != after {
        return Some(format!(
            "{name}: HOST WRITE under {}: before {before:?} after {after:?}",
            victim.path()
        ));
    }
    if out.contains(HOST_BUNDLE) {
        return Some(format!(
            "{name}: a host file leaked into the sandbox: {out}"
        ));
    }
    match o.status.code() {
        Some(0)
            if out.contains("dns-ok\n1\n")
                && out.contains("writable\nproc-ok\ndev-ok\n")
                && out.contains("BEGIN CERTIFICATE") =>
        {
            None
        }
        Some(125) if !must_work && err.contains("[image_unsupported]") => None,
        _ => Some(format!(
            "{name}: neither working nor cleanly refused: {:?}\n{out}\n{err}",
            o.status.code()
        )),
    }
}

fn assert_all(failures: Vec<String>, e: &Env) {
    assert!(
        failures.is_empty(),
        "{}\n--- server log ---\n{}",
        failures.join("\n"),
        e.server.log()
    );
}

type Case = (&'static str, Box<dyn Fn(&str, &str) -> Layer>, bool);

fn run_all(e: &Env, cases: Vec<Case>) {
    let mut failures = Vec::new();
    for (name, case, must_work) in &cases {
        failures.extend(check(e, name, case.as_ref(), *must_work));
    }
    assert_all(failures, e);
}

both_runtimes!(
    etc_paths_linked_to_the_host_are_confined,
    etc_paths_linked_to_the_host_are_confined_on
);
/// `/etc`, `/etc/resolv.conf`, `/etc/hosts`, `/etc/ssl`, `/etc/ssl/certs` and the CA
/// bundle pointing at the host (`t` is the host dir, `r` the same reached by `../`s):
/// absolute, relative, dangling, at existing host files.
fn etc_paths_linked_to_the_host_are_confined_on(rt: Runtime) {
    let e = env(rt);
    let etc = || Layer::default().dir("etc");
    let certs = move || etc().dir("etc/ssl").dir("etc/ssl/certs");
    let cases: Vec<Case> = vec![
        (
            "etc-abs",
            Box::new(|t, _| Layer::default().symlink("etc", &format!("{t}/etc"))),
            false,
        ),
        (
            "etc-rel",
            Box::new(|_, r| Layer::default().symlink("etc", &format!("{r}/etc"))),
            false,
        ),
        (
            "etc-dangling",
            Box::new(|t, _| Layer::default().symlink("etc", &format!("{t}/none"))),
            false,
        ),
        (
            "etc-file",
            Box::new(|_, _| Layer::default().file("etc", b"not a dir", 0o644)),
            false,
        ),
        (
            "resolv-dir",
            Box::new(move |_, _| etc().dir("etc/resolv.conf")),
            false,
        ),
        (
            "resolv-abs",
            Box::new(move |t, _| etc().symlink("etc/resolv.conf", &format!("{t}/resolv.conf"))),
            true,
        ),
        (
            "resolv-rel",
            Box::new(move |_, r| etc().symlink("etc/resolv.conf", &format!("{r}/resolv.conf"))),
            true,
        ),
        (
            "resolv-dangling",
            Box::new(move |_, _| etc().symlink("etc/resolv.conf", "/nonexistent/dir/resolv.conf")),
            true,
        ),
        (
            "resolv-host-file",
            Box::new(move |t, _| {
                etc().symlink("etc/resolv.conf", &format!("{t}/certs/ca-certificates.crt"))
            }),
            true,
        ),
        (
            "resolv-chained",
            Box::new(move |t, _| {
                etc()
                    .symlink("etc/resolv.conf", "resolv2")
                    .symlink("etc/resolv2", &format!("{t}/etc/resolv.conf"))
            }),
            true,
        ),
        (
            "hosts-abs",
            Box::new(move |t, _| etc().symlink("etc/hosts", &format!("{t}/hosts"))),
            true,
        ),
        (
            "ssl-abs",
            Box::new(move |t, _| etc().symlink("etc/ssl", &format!("{t}/ssl"))),
            true,
        ),
        (
            "ssl-rel",
            Box::new(move |_, r| etc().symlink("etc/ssl", &format!("{r}/ssl"))),
            true,
        ),
        (
            "certs-abs",
            Box::new(move |t, _| {
                etc()
                    .dir("etc/ssl")
                    .symlink("etc/ssl/certs", &format!("{t}/certs"))
            }),
            true,
        ),
        (
            "certs-rel",
            Box::new(move |_, r| {
                etc()
                    .dir("etc/ssl")
                    .symlink("etc/ssl/certs", &format!("{r}/certs"))
            }),
            true,
        ),
        (
            "bundle-abs",
            Box::new(move |t, _| {
                certs().symlink(
                    "etc/ssl/certs/ca-certificates.crt",
                    &format!("{t}/certs/ca-certificates.crt"),
                )
            }),
            true,
        ),
        (
            "bundle-rel",
            Box::new(move |_, r| {
                certs().symlink(
                    "etc/ssl/certs/ca-certificates.crt",
                    &format!("{r}/certs/ca-certificates.crt"),
                )
            }),
            true,
        ),
        (
            "bundle-dangling",
            Box::new(move |t, _| {
                certs().symlink(
                    "etc/ssl/certs/ca-certificates.crt",
                    &format!("{t}/new-bundle.crt"),
                )
            }),
            true,
        ),
    ];
    run_all(&e, cases);
}

both_runtimes!(
    mountpoints_and_run_linked_to_the_host_are_confined,
    mountpoints_and_run_linked_to_the_host_are_confined_on
);
/// `/run`, `/run/cleanroom` and every mountpoint the setup creates pointing at the host,
/// directly, relatively, at existing host dirs or through a chain of links.
fn mountpoints_and_run_linked_to_the_host_are_confined_on(rt: Runtime) {
    let e = env(rt);
    let mut cases: Vec<Case> = vec![
        (
            "run-abs",
            Box::new(|t, _| Layer::default().symlink("run", &format!("{t}/run"))),
            true,
        ),
        (
            "run-rel",
            Box::new(|_, r| Layer::default().symlink("run", &format!("{r}/run"))),
            true,
        ),
        (
            "run-chained",
            Box::new(|t, _| {
                Layer::default()
                    .symlink("run", "r1")
                    .symlink("r1", "/r2")
                    .symlink("r2", &format!("{t}/run"))
            }),
            true,
        ),
        (
            "run-cleanroom-abs",
            Box::new(|t, _| {
                Layer::default()
                    .dir("run")
                    .symlink("run/cleanroom", &format!("{t}/rc"))
            }),
            true,
        ),
        (
            "run-cleanroom-existing",
            Box::new(|t, _| {
                Layer::default()
                    .dir("run")
                    .symlink("run/cleanroom", &format!("{t}/run"))
            }),
            true,
        ),
        (
            "run-cleanroom-rel",
            Box::new(|_, r| {
                Layer::default()
                    .dir("run")
                    .symlink("run/cleanroom", &format!("{r}/run"))
            }),
            true,
        ),
        (
            "resolv-through-run",
            Box::new(|t, _| {
                Layer::default()
                    .dir("etc")
                    .symlink("etc/resolv.conf", "/run/systemd/resolve/stub-resolv.conf")
                    .symlink("run", &format!("{t}/run"))
            }),
            true,
        ),
    ];
    for m in ["proc", "dev", "tmp", "root", "workspace", "home"] {
        let name = |k: &str| -> &'static str { Box::leak(format!("{m}-{k}").into_boxed_str()) };
        cases.push((
            name("abs"),
            Box::new(move |t, _| Layer::default().symlink(m, &format!("{t}/{m}"))),
            true,
        ));
        cases.push((
            name("rel"),
            Box::new(move |_, r| Layer::default().symlink(m, &format!("{r}/{m}"))),
            true,
        ));
        cases.push((
            name("existing"),
            Box::new(move |t, _| Layer::default().symlink(m, &format!("{t}/etc"))),
            true,
        ));
        cases.push((
            name("file"),
            Box::new(move |_, _| Layer::default().file(m, b"not a dir", 0o644)),
            true,
        ));
    }
    run_all(&e, cases);
}

both_runtimes!(
    links_inside_the_image_still_work,
    links_inside_the_image_still_work_on
);
/// Links that stay inside the image keep working: a relative bundle link (Alpine-style)
/// is read and covered through the image's own tree, `/etc/resolv.conf` pointing into
/// `/run` (systemd-resolved style) is redirected inside the sandbox.
fn links_inside_the_image_still_work_on(rt: Runtime) {
    let e = env(rt);
    let layer = || {
        Layer::default()
            .dir("etc")
            .dir("etc/ssl")
            .dir("etc/ssl/certs")
            .dir("pki")
            .file("pki/bundle.pem", b"# IMAGE-OWN-CA\n", 0o644)
            .symlink(
                "etc/ssl/certs/ca-certificates.crt",
                "../../../pki/bundle.pem",
            )
            .symlink("etc/resolv.conf", "../run/systemd/resolve/stub-resolv.conf")
    };
    let o = run_case(&e, "inside", layer().gz());
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# IMAGE-OWN-CA\n"), "{out}");
    assert!(out.contains("dns-ok\n1\n"), "{out}");
    assert_eq!(check(&e, "inside2", &|_, _| layer(), true), None);
    let reference = e.reg.push_image(
        "test/inside3",
        &[
            busybox_layer(),
            Layer::default()
                .dir("etc")
                .dir("etc/ssl")
                .dir("etc/ssl/certs")
                .dir("pki")
                .file("pki/bundle.pem", b"# IMAGE-OWN-CA\n", 0o644)
                .symlink("etc/ssl/certs/ca-certificates.crt", "/pki/bundle.pem")
                .gz(),
        ],
    );
    let policy = write(
        &e.dir,
        "inside3.yaml",
        &format!(
            "version: 1\nsandbox:\n  image:\n    ref: {reference}\n  network:\n    allow:\n      - host: api.test\n  secrets:\n    TOKEN:\n      hosts: [api.test]\n"
        ),
    );
    let o = e.server.run(&rt.args(
        1,
        &[
            "exec",
            "-n",
            "--policy",
            &policy,
            "--",
            "/bin/sh",
            "-c",
            "grep -c -e IMAGE-OWN-CA -e 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt",
        ],
    ));
    assert_eq!(stdout(&o), "2\n", "{}", stderr(&o));
}
