//! The public Python index's layout on loopback: the simple index on one host name whose
//! pages link every file absolutely on a second host name (one of them through a redirect),
//! both behind TLS fronts that log what the upstream sees, and a real pypiserver behind
//! them. pip in real sandboxes, through the gateway.

use super::*;

const INDEX_HOST: &str = "pypi.test";
const FILES_HOST: &str = "files.test";

/// What a front does besides relaying.
#[derive(Clone)]
enum Role {
    /// Index pages: `/packages/…` links become absolute links on the files host
    /// (`second_pkg` files through `/redirect/…`).
    Index { files_origin: String },
    /// Files: `/redirect/<path>` answers 302 to `<files_origin>/<path>`.
    Files { files_origin: String },
}

/// A TLS front on its own port, logging every request path.
struct LayoutFront {
    port: u16,
    paths: Arc<Mutex<Vec<String>>>,
}

impl LayoutFront {
    fn start(backend_port: u16, tls: rustls::ServerConfig, role: Role) -> LayoutFront {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        LayoutFront::serve(l, backend_port, tls, role)
    }

    fn serve(
        l: TcpListener,
        backend_port: u16,
        tls: rustls::ServerConfig,
        role: Role,
    ) -> LayoutFront {
        let port = l.local_addr().unwrap().port();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (p, tls) = (paths.clone(), Arc::new(tls));
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let (p, tls, role) = (p.clone(), tls.clone(), role.clone());
                std::thread::spawn(move || {
                    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
                    let Ok(conn) = rustls::ServerConnection::new(tls) else {
                        return;
                    };
                    let mut client = rustls::StreamOwned::new(conn, s);
                    layout_relay(&mut client, backend_port, &p, &role);
                    client.conn.send_close_notify();
                    let _ = client.flush();
                });
            }
        });
        LayoutFront { port, paths }
    }

    fn wheel_requests(&self) -> Vec<String> {
        let paths = self.paths.lock().unwrap();
        paths
            .iter()
            .filter(|p| p.ends_with(".whl"))
            .cloned()
            .collect()
    }
}

fn layout_relay<S: Read + Write>(
    client: &mut S,
    backend_port: u16,
    paths: &Mutex<Vec<String>>,
    role: &Role,
) {
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
    let Some(path) = head
        .first()
        .and_then(|l| l.split_whitespace().nth(1))
        .map(str::to_string)
    else {
        return;
    };
    paths.lock().unwrap().push(path.clone());
    if let Role::Files { files_origin } = role {
        let target = match (
            path.strip_prefix("/redirect/"),
            path.strip_prefix("/redirect-away/"),
        ) {
            (Some(rest), _) => Some(format!("{files_origin}/{rest}")),
            (_, Some(rest)) => Some(format!("https://elsewhere.test/{rest}")),
            _ => None,
        };
        if let Some(target) = target {
            let _ = write!(
                r.get_mut(),
                "HTTP/1.1 302 Found\r\nLocation: {target}\r\nContent-Length: 0\r\n\
                 Connection: close\r\n\r\n"
            );
            return;
        }
    }
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
    if let Role::Index { files_origin } = role {
        if let Some(i) = resp.windows(4).position(|w| w == b"\r\n\r\n") {
            let body = String::from_utf8_lossy(&resp[i + 4..])
                .replace(
                    "href=\"/packages/second_pkg",
                    &format!("href=\"{files_origin}/redirect/packages/second_pkg"),
                )
                .replace(
                    "href=\"/packages/",
                    &format!("href=\"{files_origin}/packages/"),
                );
            let head: String = String::from_utf8_lossy(&resp[..i])
                .lines()
                .filter(|l| !l.to_ascii_lowercase().starts_with("content-length:"))
                .map(|l| format!("{l}\r\n"))
                .collect();
            resp = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes();
        }
    }
    let _ = r.get_mut().write_all(&resp);
}

/// `pip install --require-hashes -r requirements.txt` against an index whose files live on
/// another host (one behind a redirect): installs through the gateway; an unpinned file
/// on the files host is `lockfile_violation` and never reaches it; a second sandbox's
/// install is served from the cache (the files host sees no second download). Redirects
/// are followed by the gateway, never off the declared hosts; plain HTTP is refused.
#[test]
fn pip_installs_from_an_index_whose_files_live_on_another_host_and_caches_them() {
    let pypi = PypiServer::start();
    let demo = pypi.publish("demo-pkg", "1.0.0", "demo-1.0.0");
    let second = pypi.publish("second-pkg", "1.0.0", "second-1.0.0");
    pypi.publish("demo-pkg", "2.0.0", "demo-2.0.0");
    let (ca_pem, tls) = test_pki(&[INDEX_HOST, FILES_HOST]);
    let files_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let files_origin = format!(
        "https://{FILES_HOST}:{}",
        files_listener.local_addr().unwrap().port()
    );
    let files = LayoutFront::serve(
        files_listener,
        pypi.port,
        tls.clone(),
        Role::Files {
            files_origin: files_origin.clone(),
        },
    );
    let index = LayoutFront::start(
        pypi.port,
        tls,
        Role::Index {
            files_origin: files_origin.clone(),
        },
    );
    let ca = tempfile::tempdir().unwrap();
    std::fs::write(ca.path().join("ca.pem"), ca_pem).unwrap();
    let s = Server::start_with(&[
        "--egress-resolve",
        &format!("{INDEX_HOST}=127.0.0.1"),
        "--egress-resolve",
        &format!("{FILES_HOST}=127.0.0.1"),
        "--upstream-ca",
        ca.path().join("ca.pem").to_str().unwrap(),
        "--registry-upstream",
        &format!(
            "pypi={INDEX_HOST}:{},files={FILES_HOST}:{}",
            index.port, files.port
        ),
    ]);
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    std::fs::write(
        r.join("requirements.txt"),
        format!("demo-pkg==1.0.0 --hash=sha256:{demo}\nsecond-pkg==1.0.0 --hash=sha256:{second}\n"),
    )
    .unwrap();
    std::fs::write(
        r.join("cleanroom.yaml"),
        "version: 1\nrepository: {}\nsandbox:\n  registries:\n    - kind: pypi\n      \
         lockfile: requirements.txt\n",
    )
    .unwrap();
    git(r, &["init", "-q"]);
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "init"]);
    let pip = format!(
        "python3 -m pip install -q --no-cache-dir --disable-pip-version-check --no-deps \
         --require-hashes --index-url https://{INDEX_HOST}:{}/simple/ --target /tmp/site \
         -r requirements.txt && PYTHONPATH=/tmp/site python3 -c \
         'import demo_pkg, second_pkg; print(demo_pkg.MARKER, second_pkg.MARKER)'",
        index.port
    );
    let script = format!(
        "{pip}
         code=$({CURL} {files_origin}/packages/demo_pkg-2.0.0-py3-none-any.whl); echo \"unpinned $code $(grep -i x-cleanroom-deny /tmp/head | tr -d '\\r')\"
         code=$({CURL} {files_origin}/redirect-away/packages/demo_pkg-1.0.0-py3-none-any.whl); echo \"away $code $(grep -i x-cleanroom-deny /tmp/head | tr -d '\\r')\"
         code=$({CURL} http://{FILES_HOST}:{}/packages/demo_pkg-1.0.0-py3-none-any.whl); echo \"plain $code\""
        ,
        files.port
    );
    let t0 = std::time::Instant::now();
    let o = exec_in_repo(&s, r, &script);
    eprintln!("first install (and three curls): {:?}", t0.elapsed());
    let out = stdout(&o);
    assert!(
        out.starts_with("demo-1.0.0 second-1.0.0\n"),
        "{out}\n{}",
        stderr(&o)
    );
    assert!(
        out.contains("unpinned 403 x-cleanroom-deny: lockfile_violation"),
        "{out}"
    );
    // Redirects are followed server-side, only within the index and declared file hosts.
    assert!(
        out.contains("away 403 x-cleanroom-deny: registry_not_allowed"),
        "{out}"
    );
    // Plain HTTP to a mediated file host is refused (never a plain allow).
    assert!(!out.contains("plain 200"), "{out}");
    let first = files.wheel_requests();
    assert!(
        first
            .iter()
            .any(|p| p == "/packages/demo_pkg-1.0.0-py3-none-any.whl"),
        "{first:?}"
    );
    assert!(
        first
            .iter()
            .any(|p| p == "/redirect/packages/second_pkg-1.0.0-py3-none-any.whl")
            && first
                .iter()
                .any(|p| p == "/packages/second_pkg-1.0.0-py3-none-any.whl"),
        "the redirect was followed on the files host: {first:?}"
    );
    assert!(
        !first.iter().any(|p| p.contains("demo_pkg-2.0.0")),
        "{first:?}"
    );
    assert!(
        index.wheel_requests().is_empty(),
        "{:?}",
        index.paths.lock().unwrap()
    );
    // A second sandbox: the same install, every file from the cache.
    let t0 = std::time::Instant::now();
    let o = exec_in_repo(&s, r, &pip);
    eprintln!("second install (cache): {:?}", t0.elapsed());
    assert_eq!(stdout(&o), "demo-1.0.0 second-1.0.0\n", "{}", stderr(&o));
    assert_eq!(files.wheel_requests(), first, "no second download");
}
