//! Git mediation end to end (`sandbox.git`): real `git http-backend` behind a small HTTPS
//! CGI wrapper (python3) on loopback, real sandboxes running the host's git through the
//! gateway. A declared repository clones; an undeclared one is refused; push is denied
//! unless declared with `access: push`, and then works.

use cleanroom_e2e::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const HOST: &str = "git.test";

/// Serves `git http-backend` for the bare repositories under argv[1], over HTTPS, logging
/// each request line to argv[5]. Request bodies arrive with a length (the gateway re-sends
/// them so); CGI output is answered with a length too.
const BACKEND: &str = r#"
import http.server, socketserver, ssl, subprocess, sys, os
root, port, cert, key, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def any(self):
        path, _, query = self.path.partition("?")
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with open(log, "a") as f:
            f.write(f"{self.command} {self.path}\n")
        env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1", REQUEST_METHOD=self.command,
                   PATH_INFO=path, QUERY_STRING=query, CONTENT_TYPE=self.headers.get("Content-Type", ""),
                   CONTENT_LENGTH=str(len(body)), REMOTE_USER="test", REMOTE_ADDR="127.0.0.1")
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        sep = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
        head, _, rest = out.partition(sep)
        status, headers = 200, []
        for line in head.decode().splitlines():
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)
    do_GET = do_POST = any
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
srv = S(("127.0.0.1", port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
"#;

struct Backend {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    ca: std::path::PathBuf,
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Backend {
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("requests.log")).unwrap_or_default()
    }

    fn head_of(&self, repo: &str) -> String {
        let o = Command::new("git")
            .arg("-C")
            .arg(self.dir.path().join("repos").join(repo))
            .args(["rev-parse", "HEAD"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }
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

/// A bare repository `repos/<name>` holding one commit with a README.
fn bare_repo(root: &Path, name: &str, readme: &str) {
    let bare = root.join("repos").join(name);
    std::fs::create_dir_all(&bare).unwrap();
    git(&bare, &["init", "-q", "--bare", "-b", "main"]);
    git(&bare, &["config", "http.receivepack", "true"]);
    let work = root.join(format!("work-{}", name.replace('/', "-")));
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("README"), readme).unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "init"]);
    git(&work, &["push", "-q", bare.to_str().unwrap(), "main"]);
}

fn start_backend() -> Backend {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    bare_repo(root, "org/app.git", "hello from app\n");
    bare_repo(root, "org/pushable.git", "hello from pushable\n");
    bare_repo(root, "org/secret.git", "secret\n");
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec![HOST.to_string()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    std::fs::write(root.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(root.join("cert.pem"), leaf.pem()).unwrap();
    std::fs::write(root.join("key.pem"), key.serialize_pem()).unwrap();
    std::fs::write(root.join("backend.py"), BACKEND).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new("python3")
        .arg(root.join("backend.py"))
        .arg(root.join("repos"))
        .arg(port.to_string())
        .arg(root.join("cert.pem"))
        .arg(root.join("key.pem"))
        .arg(root.join("requests.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let ca = root.join("ca.pem");
    Backend {
        child,
        port,
        dir,
        ca,
    }
}

#[test]
fn declared_repositories_clone_undeclared_are_refused_and_push_needs_push_access() {
    let b = start_backend();
    let s = Server::start_with(&[
        "--egress-resolve",
        &format!("{HOST}=127.0.0.1"),
        "--upstream-ca",
        b.ca.to_str().unwrap(),
    ]);
    let origin = format!("https://{HOST}:{}", b.port);
    let policy_dir = tempfile::tempdir().unwrap();
    let policy = write(
        &policy_dir,
        "cleanroom.yaml",
        &format!(
            "version: 1\nsandbox:\n  git:\n    - url: {origin}/org/app.git\n      access: fetch\n\
             \x20   - url: {origin}/org/pushable.git\n      access: push\n"
        ),
    );
    let id = cleanroom_e2e::stdout(&s.run(&["sandbox", "create", "--policy", &policy]))
        .trim()
        .to_string();
    assert!(id.starts_with("sbx_"), "{id}");
    let commit = "git -c user.email=a@example.invalid -c user.name=a commit -q --allow-empty -m x";
    let script = format!(
        "cd /tmp
         git clone -q {origin}/org/app.git app && cat app/README
         git clone -q {origin}/org/secret.git secret >/tmp/secret.out 2>&1; echo secret-exit=$?; cat /tmp/secret.out
         (cd app && {commit} && git push -q origin HEAD:main >/tmp/push.out 2>&1; echo push-exit=$?; cat /tmp/push.out)
         git clone -q {origin}/org/pushable.git p && (cd p && {commit} && git push -q origin HEAD:main; echo pushable-exit=$?)
         curl -s -o /dev/null -D - '{origin}/org/app.git/info/refs?service=git-receive-pack' | grep -i -e '^HTTP' -e x-cleanroom-deny
         curl -s -o /dev/null -D - '{origin}/org/app.git/HEAD' | grep -i -e '^HTTP' -e x-cleanroom-deny
         curl -s -o /dev/null -D - '{origin}/org/app.git/info/refs?service=git-upload-pack' | grep -i '^HTTP'"
    );
    let o = s.sh_in(&id, &script);
    let out = stdout(&o);
    assert!(out.contains("hello from app"), "{out}\n{}", stderr(&o));
    // Undeclared repository: refused, and the upstream never saw it.
    assert!(out.contains("secret-exit=128"), "{out}");
    assert!(out.contains("403"), "{out}");
    // Push to a fetch-only repository: denied before the upstream.
    assert!(!out.contains("push-exit=0"), "{out}");
    assert!(out.contains("git_push_not_allowed"), "{out}");
    // Push where declared: works, the upstream has the new commit.
    assert!(out.contains("pushable-exit=0"), "{out}");
    let log = b.log();
    assert!(!log.contains("secret"), "{log}");
    assert!(!log.contains("app.git/git-receive-pack"), "{log}");
    assert!(
        !log.contains("app.git/info/refs?service=git-receive-pack"),
        "{log}"
    );
    assert!(
        log.contains("POST /org/pushable.git/git-receive-pack"),
        "{log}"
    );
    assert_ne!(b.head_of("org/pushable.git"), "", "{log}");
    // The dumb protocol and other paths are not served.
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("HTTP") || l.to_lowercase().starts_with("x-cleanroom"))
        .collect();
    assert!(
        lines
            .iter()
            .filter(|l| l.to_lowercase().contains("registry_not_allowed"))
            .count()
            >= 1,
        "{out}"
    );
    assert!(lines.last().is_some_and(|l| l.contains("200")), "{out}");
    s.run(&["sandbox", "rm", &id]);
}
