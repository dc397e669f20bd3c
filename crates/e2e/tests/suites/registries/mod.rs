//! Package registry mediation end to end (`sandbox.registries`): a real npm registry
//! (verdaccio, installed under .tools/ by scripts/deps.sh, no uplinks) on loopback behind a
//! small TLS front that records every request path (the "upstream sees" log), a real server,
//! real sandboxes running the host's `npm ci` through the gateway, and lockfiles committed
//! in real git repositories.

mod notices;
mod pypi_files;
use base64::Engine as _;
use cleanroom_e2e::*;
use sha2::Digest as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HOST: &str = "registry.test";

fn tools_bin(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.tools/node_modules/.bin")
        .join(name);
    assert!(p.exists(), "{} missing: run scripts/deps.sh", p.display());
    p
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A verdaccio with no uplinks on loopback; killed (by its own pid) on drop.
struct Verdaccio {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Verdaccio {
    fn start() -> Verdaccio {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let config = format!(
            "storage: {d}/storage\nauth:\n  htpasswd:\n    file: {d}/htpasswd\n    max_users: -1\n\
             uplinks: {{}}\npackages:\n  '**':\n    access: $all\n    publish: $all\n\
             logs: {{ type: stdout, format: json, level: http }}\nweb: {{ enable: false }}\n"
        );
        std::fs::write(dir.path().join("config.yaml"), config).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = Command::new(tools_bin("verdaccio"))
            .arg("--config")
            .arg(dir.path().join("config.yaml"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let v = Verdaccio { child, port, dir };
        assert!(
            eventually(Duration::from_secs(60), || v.get("/-/ping").0 == 200),
            "verdaccio did not start: {}",
            std::fs::read_to_string(v.dir.path().join("log")).unwrap_or_default()
        );
        v
    }

    fn request(&self, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return (0, Vec::new());
        };
        let _ = write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = s.write_all(body);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let status = String::from_utf8_lossy(&out)
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = match out.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(i) => out[i + 4..].to_vec(),
            None => Vec::new(),
        };
        (status, body)
    }

    fn get(&self, path: &str) -> (u16, Vec<u8>) {
        self.request("GET", path, b"")
    }

    /// Publish `name@version` (one file, index.js) the way `npm publish` does; returns
    /// the lockfile integrity of its tarball.
    fn publish(&self, name: &str, version: &str, marker: &str) -> String {
        let tgz = tarball(name, version, marker);
        let integrity = sri(&tgz);
        let file = format!("{name}-{version}.tgz");
        let doc = serde_json::json!({
            "_id": name, "name": name, "dist-tags": {"latest": version},
            "versions": {version: {
                "name": name, "version": version, "main": "index.js",
                "_id": format!("{name}@{version}"),
                "dist": {
                    "integrity": integrity,
                    "tarball": format!("http://127.0.0.1:{}/{name}/-/{file}", self.port),
                },
            }},
            "_attachments": {file: {
                "content_type": "application/octet-stream",
                "data": base64::engine::general_purpose::STANDARD.encode(&tgz),
                "length": tgz.len(),
            }},
        });
        let (status, body) = self.request("PUT", &format!("/{name}"), doc.to_string().as_bytes());
        assert!(
            (200..300).contains(&status),
            "publish {name}@{version}: {status} {}",
            String::from_utf8_lossy(&body)
        );
        integrity
    }

    /// Replace a published tarball's bytes in the registry's storage (a compromised
    /// registry serving other bytes under the same version).
    fn tamper(&self, name: &str, version: &str) {
        let path = self
            .dir
            .path()
            .join(format!("storage/{name}/{name}-{version}.tgz"));
        assert!(path.exists(), "{}", path.display());
        std::fs::write(path, tarball(name, version, "EVIL")).unwrap();
    }
}

impl Drop for Verdaccio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tarball(name: &str, version: &str, marker: &str) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let files = [
        (
            "package/package.json",
            format!(r#"{{"name":"{name}","version":"{version}","main":"index.js"}}"#),
        ),
        (
            "package/index.js",
            format!("module.exports = {marker:?};\n"),
        ),
    ];
    for (path, body) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, path, body.as_bytes()).unwrap();
    }
    let tar = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

fn sri(data: &[u8]) -> String {
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha512::digest(data))
    )
}

/// A TLS front for the registry (certificate for registry.test from a test CA the server
/// trusts through --upstream-ca): records each request's path, then relays it to verdaccio.
struct Front {
    port: u16,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Front {
    fn start(backend_port: u16, tls: rustls::ServerConfig) -> Front {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (p, tls) = (paths.clone(), Arc::new(tls));
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let (p, tls) = (p.clone(), tls.clone());
                std::thread::spawn(move || {
                    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
                    let Ok(conn) = rustls::ServerConnection::new(tls) else {
                        return;
                    };
                    let mut client = rustls::StreamOwned::new(conn, s);
                    relay(&mut client, backend_port, &p);
                    client.conn.send_close_notify();
                    let _ = client.flush();
                });
            }
        });
        Front { port, paths }
    }

    fn tarball_requests(&self) -> Vec<String> {
        self.paths
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.ends_with(".tgz"))
            .cloned()
            .collect()
    }
}

/// One request per connection (what the gateway sends): head recorded and relayed with
/// `Connection: close`, the response copied back to the end.
fn relay<S: Read + Write>(client: &mut S, backend_port: u16, paths: &Mutex<Vec<String>>) {
    let mut r = BufReader::new(client);
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" {
            break;
        }
        head.push(line);
    }
    let Some(path) = head.first().and_then(|l| l.split_whitespace().nth(1)) else {
        return;
    };
    paths.lock().unwrap().push(path.to_string());
    let Ok(mut up) = TcpStream::connect(("127.0.0.1", backend_port)) else {
        return;
    };
    for l in &head {
        if !l.to_ascii_lowercase().starts_with("connection:") {
            let _ = up.write_all(l.as_bytes());
        }
    }
    let _ = up.write_all(b"Connection: close\r\n\r\n");
    let mut resp = Vec::new();
    let _ = up.read_to_end(&mut resp);
    let _ = r.get_mut().write_all(&resp);
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.email=t@example.invalid", "-c", "user.name=t"])
        .args(args)
        .output()
        .unwrap();
    assert!(ok.status.success(), "git {args:?}: {}", stderr(&ok));
}

/// A committed repository depending on `deps` (name, version, integrity), with its
/// package-lock.json, an .npmrc pointing npm at the registry, and the policy.
fn repo(port: u16, deps: &[(&str, &str, &str)], mode: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let origin = format!("https://{HOST}:{port}");
    let mut dependencies = serde_json::Map::new();
    let mut packages = serde_json::Map::new();
    for (name, version, integrity) in deps {
        dependencies.insert(name.to_string(), (*version).into());
        packages.insert(
            format!("node_modules/{name}"),
            serde_json::json!({
                "version": version,
                "resolved": format!("{origin}/{name}/-/{name}-{version}.tgz"),
                "integrity": integrity,
            }),
        );
    }
    packages.insert(
        String::new(),
        serde_json::json!({"name": "app", "version": "1.0.0", "dependencies": dependencies}),
    );
    let pkg = serde_json::json!({"name": "app", "version": "1.0.0", "dependencies": dependencies});
    let lock = serde_json::json!({
        "name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
        "packages": packages,
    });
    std::fs::write(r.join("package.json"), pkg.to_string()).unwrap();
    std::fs::write(r.join("package-lock.json"), lock.to_string()).unwrap();
    std::fs::write(
        r.join(".npmrc"),
        format!("registry={origin}/\ncache=/tmp/npm-cache\naudit=false\nfund=false\nupdate-notifier=false\n"),
    )
    .unwrap();
    std::fs::write(
        r.join("cleanroom.yaml"),
        format!(
            "version: 1\nrepository: {{}}\nsandbox:\n  registries:\n    - kind: npm\n      \
             lockfile: package-lock.json\n      mode: {mode}\n      upstream: '{HOST}:{port}'\n"
        ),
    )
    .unwrap();
    git(r, &["init", "-q"]);
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "init"]);
    dir
}

struct Setup {
    server: Server,
    verdaccio: Verdaccio,
    front: Front,
    _ca: tempfile::TempDir,
}

fn setup() -> Setup {
    let verdaccio = Verdaccio::start();
    let (ca_pem, tls) = test_pki(&[HOST]);
    let front = Front::start(verdaccio.port, tls);
    let ca = tempfile::tempdir().unwrap();
    let ca_path = ca.path().join("ca.pem");
    std::fs::write(&ca_path, ca_pem).unwrap();
    let server = Server::start_with(&[
        "--egress-resolve",
        &format!("{HOST}=127.0.0.1"),
        "--upstream-ca",
        ca_path.to_str().unwrap(),
    ]);
    Setup {
        server,
        verdaccio,
        front,
        _ca: ca,
    }
}

fn exec_in_repo(s: &Server, repo: &Path, script: &str) -> std::process::Output {
    let policy = repo.join("cleanroom.yaml").display().to_string();
    s.run(&["exec", "-n", "--policy", &policy, "--", "sh", "-c", script])
}

/// `curl` from inside the sandbox: status and the deny header, then the body.
const CURL: &str = "curl -s -o /tmp/body -D /tmp/head -w '%{http_code}'";

#[test]
fn npm_ci_installs_pinned_packages_refuses_the_rest_and_serves_the_second_install_from_cache() {
    let t = setup();
    let v = &t.verdaccio;
    let pad = v.publish("left-pad", "1.0.0", "pad-1.0.0");
    v.publish("left-pad", "1.1.0", "pad-1.1.0");
    v.publish("unpinned", "1.0.0", "unpinned");
    let port = t.front.port;
    let repo = repo(port, &[("left-pad", "1.0.0", &pad)], "enforce");

    // 1. The pinned install works, through the gateway, from the upstream.
    let o = exec_in_repo(
        &t.server,
        repo.path(),
        "npm ci && node -e 'console.log(require(\"left-pad\"))'",
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("pad-1.0.0"), "{}", stdout(&o));
    assert_eq!(
        t.front.tarball_requests(),
        vec!["/left-pad/-/left-pad-1.0.0.tgz".to_string()]
    );

    // 2. A second sandbox, same lockfile: served from the host's cache, the upstream sees
    //    no artifact request.
    let o = exec_in_repo(
        &t.server,
        repo.path(),
        "npm ci && node -e 'console.log(require(\"left-pad\"))'",
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("pad-1.0.0"), "{}", stdout(&o));
    assert_eq!(
        t.front.tarball_requests().len(),
        1,
        "{:?}",
        t.front.tarball_requests()
    );

    // 3. Anything the lockfile does not pin is refused with its name and version; the
    //    packument only lists pinned versions, with tarballs pointing back at the gateway.
    let origin = format!("https://{HOST}:{port}");
    let script = format!(
        "set -u
         check() {{ code=$({CURL} \"$1\"); echo \"$1 $code $(grep -i x-cleanroom-deny /tmp/head | tr -d '\\r')\"; cat /tmp/body; echo; }}
         check {origin}/left-pad/-/left-pad-1.1.0.tgz
         check {origin}/unpinned
         check {origin}/unpinned/-/unpinned-1.0.0.tgz
         check '{origin}/-/v1/search?text=pad'
         check {origin}/left-pad
         npm install --no-save unpinned@1.0.0 >/tmp/npm.out 2>&1; echo npm-install-exit=$?; grep -c 403 /tmp/npm.out
         code=$({CURL} -m 10 http://{HOST}:{port}/left-pad); echo \"plain-http $code $(grep -i x-cleanroom-deny /tmp/head | tr -d '\\r')\""
    );
    let o = exec_in_repo(&t.server, repo.path(), &script);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    for (url, reason) in [
        ("left-pad-1.1.0.tgz 403", "lockfile_violation"),
        ("/unpinned 403", "lockfile_violation"),
        ("unpinned-1.0.0.tgz 403", "lockfile_violation"),
        ("text=pad 403", "registry_not_allowed"),
    ] {
        let line = out
            .lines()
            .find(|l| l.contains(url))
            .unwrap_or_else(|| panic!("{url}: {out}"));
        assert!(line.contains(reason), "{line}\n{out}");
    }
    assert!(
        out.contains("left-pad@1.1.0 is not pinned by the lockfile"),
        "{out}"
    );
    assert!(
        out.contains("package unpinned is not in the lockfile"),
        "{out}"
    );
    let packument = out
        .lines()
        .skip_while(|l| !l.contains("/left-pad 200"))
        .nth(1)
        .unwrap_or_else(|| panic!("no packument: {out}"));
    let doc: serde_json::Value = serde_json::from_str(packument).unwrap();
    let versions: Vec<_> = doc["versions"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(versions, vec!["1.0.0"], "{packument}");
    assert_eq!(
        doc["versions"]["1.0.0"]["dist"]["tarball"],
        format!("{origin}/left-pad/-/left-pad-1.0.0.tgz")
    );
    assert!(!out.contains("npm-install-exit=0"), "{out}");
    let plain = out
        .lines()
        .find(|l| l.starts_with("plain-http"))
        .unwrap_or_default();
    // Plain HTTP to the registry host is refused: it would bypass the mediation.
    assert!(
        plain.starts_with("plain-http 403") && plain.contains("registry_not_allowed"),
        "{out}"
    );
    // None of the refused artifacts reached the upstream.
    assert_eq!(
        t.front.tarball_requests().len(),
        1,
        "{:?}",
        t.front.tarball_requests()
    );
}

#[test]
fn a_tampered_artifact_is_an_integrity_mismatch_and_never_reaches_the_sandbox() {
    let t = setup();
    let v = &t.verdaccio;
    let good = v.publish("victim", "1.0.0", "genuine");
    v.tamper("victim", "1.0.0");
    let repo = repo(t.front.port, &[("victim", "1.0.0", &good)], "enforce");
    let origin = format!("https://{HOST}:{}", t.front.port);
    let script = format!(
        "npm ci >/tmp/npm.out 2>&1; echo npm-ci-exit=$?; ls node_modules/victim 2>&1 | head -1
         code=$({CURL} {origin}/victim/-/victim-1.0.0.tgz); echo \"tarball $code $(grep -i x-cleanroom-deny /tmp/head | tr -d '\\r')\"; cat /tmp/body
         grep -rl EVIL /tmp /workspace 2>/dev/null | grep -v '^/tmp/head$' | head -3; echo done"
    );
    let o = exec_in_repo(&t.server, repo.path(), &script);
    let out = stdout(&o);
    assert!(!out.contains("npm-ci-exit=0"), "{out}\n{}", stderr(&o));
    assert!(
        out.contains("tarball 403 x-cleanroom-deny: integrity_mismatch"),
        "{out}"
    );
    assert!(out.contains("victim@1.0.0"), "{out}");
    assert!(
        out.contains("No such file"),
        "victim must not be installed: {out}"
    );
    // The tampered bytes reached neither the sandbox's files nor the cache.
    assert!(
        out.trim_end().ends_with("done") && !out.contains("/tmp/npm-cache"),
        "{out}"
    );
    let cache = t.server.state_dir().join("registry-cache");
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(entries.is_empty(), "{entries:?}");
}

#[test]
fn a_lockfile_missing_from_head_refuses_the_sandbox() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(
        r.join("cleanroom.yaml"),
        format!("version: 1\nsandbox:\n  registries:\n    - {{kind: npm, lockfile: package-lock.json, upstream: {HOST}}}\n"),
    )
    .unwrap();
    git(r, &["init", "-q"]);
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "init"]);
    // Present in the work tree but not committed: not what HEAD pins.
    std::fs::write(
        r.join("package-lock.json"),
        r#"{"lockfileVersion":3,"packages":{}}"#,
    )
    .unwrap();
    let o = exec_in_repo(&s, r, "true");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("[repository_unavailable]"),
        "{}",
        stderr(&o)
    );
    // A committed but unparsable lockfile: policy_invalid naming it.
    std::fs::write(r.join("package-lock.json"), "{not json").unwrap();
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "lock"]);
    let o = exec_in_repo(&s, r, "true");
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("[policy_invalid]") && err.contains("package-lock.json"),
        "{err}"
    );
}

/// Every command that creates a sandbox from a registries policy sends its lockfiles:
/// `cleanroom create` in the repository (it used to answer "package-lock.json was not
/// supplied" where `exec` worked) and `sandbox create --policy`. A pool of such sandboxes
/// is refused at `pool create`, at once, instead of never filling.
#[test]
fn create_sends_lockfiles_and_pools_refuse_registries_policies() {
    let s = Server::start();
    let r = repo(443, &[], "enforce");
    let r = r.path();
    let mut c = s.cli();
    c.current_dir(r).args(["create"]);
    let o = output_with_timeout(c, std::time::Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).trim().starts_with("sbx_"), "{}", stdout(&o));
    let policy = r.join("cleanroom.yaml").display().to_string();
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = s.run(&["pool", "create", "--policy", &policy, "--min-ready", "1"]);
    let err = stderr(&o);
    assert!(
        err.contains("[policy_invalid]") && err.contains("sandbox.registries"),
        "{}{err}",
        stdout(&o)
    );
    let o = s.run(&["pool", "ls"]);
    assert!(!stdout(&o).contains("pool_"), "{}", stdout(&o));
}

fn events(s: &Server, sbx: &str) -> Vec<serde_json::Value> {
    let o = s.run(&["sandbox", "events", sbx]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `mode: warn` lets what the lockfile does not pin through, with an event naming it; the
/// same request in `enforce` mode is a deny event naming the package and version. Also
/// `sandbox create --policy` reads the lockfile from HEAD like `exec` does.
#[test]
fn warn_mode_lets_unpinned_through_with_an_event_enforce_records_a_deny() {
    let t = setup();
    let v = &t.verdaccio;
    let pad = v.publish("left-pad", "1.0.0", "pad-1.0.0");
    v.publish("unpinned", "1.0.0", "unpinned");
    let origin = format!("https://{HOST}:{}", t.front.port);
    let url = format!("{origin}/unpinned/-/unpinned-1.0.0.tgz");
    for (mode, code) in [("warn", "200"), ("enforce", "403")] {
        let repo = repo(t.front.port, &[("left-pad", "1.0.0", &pad)], mode);
        let policy = repo.path().join("cleanroom.yaml").display().to_string();
        let o = t.server.run(&["sandbox", "create", "--policy", &policy]);
        let id = stdout(&o).trim().to_string();
        assert!(id.starts_with("sbx_"), "{}", stderr(&o));
        let o = t.server.sh_in(
            &id,
            &format!("curl -s -o /dev/null -w '%{{http_code}}' {url}"),
        );
        assert_eq!(stdout(&o).trim(), code, "{mode}: {}", stderr(&o));
        let ev = events(&t.server, &id);
        let hit = ev.iter().find(|e| {
            e["attributes"]["reason"] == "lockfile_violation"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("unpinned@1.0.0"))
        });
        let hit = hit.unwrap_or_else(|| panic!("{mode}: no lockfile_violation event: {ev:?}"));
        let kind = if mode == "warn" {
            "egress.allow"
        } else {
            "egress.deny"
        };
        assert_eq!(hit["type"], kind, "{hit}");
        t.server.run(&["sandbox", "rm", &id]);
    }
}

/// Builds a minimal pure-Python wheel `<name>-<version>-py3-none-any.whl` in argv[1].
const MAKE_WHEEL: &str = r#"
import base64, hashlib, sys, zipfile
out, name, version, marker = sys.argv[1:5]
mod = name.replace("-", "_")
dist = f"{mod}-{version}.dist-info"
files = {
    f"{mod}/__init__.py": f"MARKER = {marker!r}\n",
    f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for path, body in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(body.encode()).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(body)}")
record.append(f"{dist}/RECORD,,")
files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
path = f"{out}/{mod}-{version}-py3-none-any.whl"
with zipfile.ZipFile(path, "w") as z:
    for p, body in files.items():
        z.writestr(p, body)
print(hashlib.sha256(open(path, "rb").read()).hexdigest())
"#;

/// A pypiserver (scripts/deps.sh: .tools/pypi-venv) serving the wheels in its directory,
/// with no fallback to any other index; killed on drop.
struct PypiServer {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for PypiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PypiServer {
    fn start() -> PypiServer {
        let bin =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/pypi-venv/bin/pypi-server");
        assert!(
            bin.exists(),
            "{} missing: run scripts/deps.sh",
            bin.display()
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("packages")).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = Command::new(bin)
            .args([
                "run",
                "-i",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-a",
                ".",
                "-P",
                ".",
            ])
            .args(["--hash-algo", "sha256", "--disable-fallback"])
            .arg(dir.path().join("packages"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let p = PypiServer { child, port, dir };
        assert!(
            eventually(Duration::from_secs(60), || TcpStream::connect((
                "127.0.0.1",
                port
            ))
            .is_ok()),
            "pypiserver did not start"
        );
        p
    }

    /// Publish a wheel (into the served directory); its sha256.
    fn publish(&self, name: &str, version: &str, marker: &str) -> String {
        let o = Command::new("python3")
            .args(["-c", MAKE_WHEEL])
            .arg(self.dir.path().join("packages"))
            .args([name, version, marker])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o).trim().to_string()
    }

    fn tamper(&self, name: &str, version: &str) {
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new("python3")
            .args(["-c", MAKE_WHEEL])
            .arg(dir.path())
            .args([name, version, "EVIL"])
            .output()
            .unwrap();
        assert!(o.status.success());
        let file = format!("{}-{version}-py3-none-any.whl", name.replace('-', "_"));
        std::fs::copy(
            dir.path().join(&file),
            self.dir.path().join("packages").join(&file),
        )
        .unwrap();
    }
}

const PYPI_HOST: &str = "pypi.test";

/// pip with `--require-hashes` through the gateway: the pinned wheel installs; an unpinned
/// project or version is `lockfile_violation`; a tampered wheel is `integrity_mismatch`.
#[test]
fn pip_require_hashes_installs_pinned_wheels_refuses_the_rest() {
    let pypi = PypiServer::start();
    let good = pypi.publish("demo-pkg", "1.0.0", "demo-1.0.0");
    pypi.publish("demo-pkg", "2.0.0", "demo-2.0.0");
    pypi.publish("other", "1.0.0", "other");
    let victim = pypi.publish("victim", "1.0.0", "genuine");
    pypi.tamper("victim", "1.0.0");
    let (ca_pem, tls) = test_pki(&[PYPI_HOST]);
    let front = Front::start(pypi.port, tls);
    let ca = tempfile::tempdir().unwrap();
    std::fs::write(ca.path().join("ca.pem"), ca_pem).unwrap();
    let s = Server::start_with(&[
        "--egress-resolve",
        &format!("{PYPI_HOST}=127.0.0.1"),
        "--upstream-ca",
        ca.path().join("ca.pem").to_str().unwrap(),
    ]);
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    std::fs::write(
        r.join("requirements.txt"),
        format!(
            "demo_pkg==1.0.0 \\\n    --hash=sha256:{good}\nvictim==1.0.0 --hash=sha256:{victim}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        r.join("demo.txt"),
        format!("demo-pkg==1.0.0 --hash=sha256:{good}\n"),
    )
    .unwrap();
    std::fs::write(
        r.join("cleanroom.yaml"),
        format!(
            "version: 1\nrepository: {{}}\nsandbox:\n  registries:\n    - kind: pypi\n      \
             lockfile: requirements.txt\n      upstream: '{PYPI_HOST}:{}'\n",
            front.port
        ),
    )
    .unwrap();
    git(r, &["init", "-q"]);
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "init"]);
    let index = format!("https://{PYPI_HOST}:{}/simple/", front.port);
    let pip = format!(
        "python3 -m pip install -q --no-cache-dir --disable-pip-version-check --no-deps \
         --require-hashes --index-url {index}"
    );
    // Without --require-hashes pip itself would not refuse: the gateway must.
    let loose = format!(
        "python3 -m pip install -q --no-cache-dir --disable-pip-version-check --no-deps --index-url {index}"
    );
    let script = format!(
        "{pip} --target /tmp/site -r demo.txt && PYTHONPATH=/tmp/site python3 -c 'import demo_pkg; print(demo_pkg.MARKER)'
         {loose} --target /tmp/s2 'demo-pkg==2.0.0' >/tmp/o2 2>&1; echo unpinned-version-exit=$?
         {loose} --target /tmp/s3 other==1.0.0 >/tmp/o3 2>&1; echo unpinned-project-exit=$?
         code=$({CURL} https://{PYPI_HOST}:{port}/packages/demo_pkg-2.0.0-py3-none-any.whl); echo \"file2 $code $(grep -i x-cleanroom-deny /tmp/head | tr -d '\\r')\"
         {pip} --target /tmp/s4 victim==1.0.0 --hash=sha256:{victim} >/tmp/o4 2>&1; echo victim-exit=$?; ls /tmp/s4/victim 2>&1 | head -1
         code=$({CURL} {index}demo-pkg/); echo \"index $code\"; cat /tmp/body
         code=$({CURL} https://{PYPI_HOST}:{port}/packages/victim-1.0.0-py3-none-any.whl); echo \"victim $code $(grep -i x-cleanroom-deny /tmp/head | tr -d '\\r')\"
         code=$({CURL} {index}other/); echo \"other $code $(grep -i x-cleanroom-deny /tmp/head | tr -d '\\r')\"",
        port = front.port
    );
    let o = exec_in_repo(&s, r, &script);
    let out = stdout(&o);
    assert!(out.starts_with("demo-1.0.0\n"), "{out}\n{}", stderr(&o));
    assert!(!out.contains("unpinned-version-exit=0"), "{out}");
    assert!(!out.contains("unpinned-project-exit=0"), "{out}");
    assert!(
        !out.contains("victim-exit=0") && out.contains("No such file"),
        "{out}"
    );
    assert!(out.contains("index 200"), "{out}");
    assert!(
        out.contains("demo_pkg-1.0.0-py3-none-any.whl") && !out.contains("demo_pkg-2.0.0"),
        "{out}"
    );
    assert!(
        out.contains("victim 403 x-cleanroom-deny: integrity_mismatch"),
        "{out}"
    );
    assert!(
        out.contains("other 403 x-cleanroom-deny: lockfile_violation"),
        "{out}"
    );
    assert!(
        out.contains("file2 403 x-cleanroom-deny: lockfile_violation"),
        "{out}"
    );
    let paths = front.paths.lock().unwrap().clone();
    assert!(
        !paths
            .iter()
            .any(|p| p.contains("demo_pkg-2.0.0") || p.contains("/other")),
        "{paths:?}"
    );
}
