//! DownloadSandboxFile is not a deputy: through the API a sandbox's owner gets at most what
//! the sandbox's own processes can read. Real server, real sandboxes, a real host secret
//! (mode 0640, root:root) in a directory the sandbox's read-only host view shows, reached
//! by links the sandbox plants itself.

use cleanroom_client::api::*;
use cleanroom_client::{ApiError, Client};
use cleanroom_e2e::*;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

const SECRET: &str = "HOST-ONLY-KEY-MATERIAL";

/// A host directory under /etc (exposed read-only in every host-view sandbox) holding a
/// root-only file; removed on drop.
struct HostSecret {
    dir: PathBuf,
}

impl HostSecret {
    fn new() -> HostSecret {
        let tag: String = tempfile::Builder::new()
            .prefix("")
            .tempfile()
            .unwrap()
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let dir = PathBuf::from(format!("/etc/cleanroom-test-{tag}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let key = dir.join("key");
        std::fs::write(&key, SECRET).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::os::unix::fs::chown(&key, Some(0), Some(0)).unwrap();
        HostSecret { dir }
    }
    fn key(&self) -> String {
        self.dir.join("key").display().to_string()
    }
}

impl Drop for HostSecret {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn download(c: &Client, sbx: &str, path: &str) -> Result<Vec<u8>, ApiError> {
    let req = DownloadSandboxFileRequest {
        sandbox_id: sbx.into(),
        path: path.into(),
        max_bytes: 0,
        ..Default::default()
    };
    Ok(c.sandboxes
        .download_sandbox_file(req)
        .await?
        .into_owned()
        .content)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every attack: the download fails with a stable code (never the bytes), and the
/// sandbox's own `cat` of the same path fails too.
fn links_to_host_only_files_are_not_served(rt: Runtime) {
    let secret = HostSecret::new();
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let key = secret.key();
    let rel_key = format!("../..{key}");
    let script = format!(
        "cd /workspace && ln -s {key} abs && ln -s {rel_key} rel && ln -s /workspace/abs chain1 \
         && ln -s chain1 chain2 && mkdir -p d/e && ln -s ../../../..{key} d/e/deep \
         && ln {key} hard 2>/dev/null || echo nohard; \
         cat {key} >/dev/null 2>&1 || echo cat-denied; \
         cat /workspace/chain2 >/dev/null 2>&1 || echo cat-link-denied; \
         printf 'mine\\000bytes' > /workspace/mine; \
         echo locked > /workspace/locked && chmod 000 /workspace/locked && ln -s locked locked-link; \
         cat /workspace/locked >/dev/null 2>&1 || echo cat-locked-denied; ls /workspace"
    );
    let o = s.sh_in(&sbx, &script);
    let out = stdout(&o);
    assert!(
        out.contains("cat-denied")
            && out.contains("cat-link-denied")
            && out.contains("cat-locked-denied"),
        "the sandbox itself must not read the key: {out}{}",
        stderr(&o)
    );
    let rt = runtime();
    let c = rt.block_on(s.client());
    let mut paths = vec![
        "/workspace/abs",
        "/workspace/rel",
        "/workspace/chain1",
        "/workspace/chain2",
        "/workspace/d/e/deep",
        key.as_str(),
        // The sandbox's own file with no read permission: its processes (no capabilities)
        // cannot read it, so neither can the API.
        "/workspace/locked",
        "/workspace/locked-link",
    ];
    if !out.contains("nohard") {
        paths.push("/workspace/hard");
    }
    for p in paths {
        match rt.block_on(download(&c, &sbx, p)) {
            Ok(bytes) => panic!(
                "{p}: the API served {:?} that the sandbox cannot read",
                String::from_utf8_lossy(&bytes)
            ),
            Err(e) => assert_eq!(e.code, "permission_denied", "{p}: {e:?}"),
        }
    }
    // What the sandbox wrote itself comes back intact.
    let mine = rt.block_on(download(&c, &sbx, "/workspace/mine")).unwrap();
    assert_eq!(mine, b"mine\0bytes");
    // Pid 1 keeps serving: processes still start and are reaped.
    let o = s.sh_in(&sbx, "echo alive");
    assert_eq!(stdout(&o), "alive\n", "{}", stderr(&o));
}
both_runtimes!(
    links_to_host_only_files_are_not_served,
    links_to_host_only_files_are_not_served
);

/// Kernel pseudo files, devices and FIFOs: refused with a stable code, never their bytes
/// (read with the server's credentials, /proc/kallsyms shows real kernel addresses), and a
/// FIFO never hangs the call or the sandbox's pid 1.
fn pseudo_files_devices_and_fifos_are_refused(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let o = s.sh_in(
        &sbx,
        "cd /workspace && ln -s /proc/kallsyms kallsyms && ln -s /proc/1/environ environ \
         && ln -s ../proc/self/status status && ln -s /proc/1/root/etc/hostname magic \
         && ln -s /sys/kernel/notes notes && ln -s /dev/zero zero && ln -s /dev/null null \
         && mkfifo fifo && ln -s fifo fifo-link && mkfifo /tmp/fifo2 && echo planted",
    );
    assert_eq!(stdout(&o), "planted\n", "{}", stderr(&o));
    let rt = runtime();
    let c = rt.block_on(s.client());
    for p in [
        "/workspace/kallsyms",
        "/workspace/environ",
        "/workspace/status",
        "/workspace/magic",
        "/workspace/notes",
        "/workspace/zero",
        "/workspace/null",
        "/workspace/fifo",
        "/workspace/fifo-link",
        "/tmp/fifo2",
        "/proc/kallsyms",
        "/proc/1/environ",
        "/proc/self/environ",
        "/proc/1/cmdline",
        "/sys/kernel/notes",
        "/dev/zero",
        "/dev/null",
        "/workspace",
        "/",
    ] {
        let r = rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(60), download(&c, &sbx, p)).await
        });
        let r = r.unwrap_or_else(|_| panic!("{p}: download hung"));
        match r {
            Ok(bytes) => panic!(
                "{p}: served {} bytes: {:?}",
                bytes.len(),
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            ),
            Err(e) => assert!(
                [
                    "file_not_readable",
                    "invalid_argument",
                    "file_not_found",
                    "permission_denied"
                ]
                .contains(&e.code.as_str()),
                "{p}: {e:?}"
            ),
        }
    }
    // A FIFO with a writer waiting on it does not hang anything either.
    let o = s.sh_in(&sbx, "(echo x > /workspace/fifo &) ; echo started");
    assert_eq!(stdout(&o), "started\n", "{}", stderr(&o));
    let e = rt
        .block_on(download(&c, &sbx, "/workspace/fifo"))
        .unwrap_err();
    assert_eq!(e.code, "invalid_argument", "{e:?}");
    let o = s.sh_in(&sbx, "echo alive");
    assert_eq!(stdout(&o), "alive\n", "{}", stderr(&o));
}
both_runtimes!(
    pseudo_files_devices_and_fifos_are_refused,
    pseudo_files_devices_and_fifos_are_refused
);

/// In an image root, a file the image makes unreadable to the sandbox's user (uid 1000,
/// mode 0600; sandbox root has no capabilities) is not served either; the image's
/// readable files are.
fn image_files_the_sandbox_cannot_read_are_not_served(rt: Runtime) {
    use cleanroom_e2e::oci::{busybox_layer, Layer, Registry};
    let reg = Registry::start();
    let layer = Layer::default()
        .dir("data")
        .owned_file("data/private", b"IMAGE-PRIVATE", 0o600, 1000)
        .file("data/public", b"IMAGE-PUBLIC", 0o644)
        .symlink("data/link", "/data/private")
        .gz();
    let reference = reg.push_image("test/deputy", &[busybox_layer(), layer]);
    let s = Server::start_with(&["--insecure-registry", &reg.host()]);
    let o = s.run(&rt.args(2, &["sandbox", "create", "--image", &reference]));
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}{}", stderr(&o), s.log());
    let o = s.sh_in(
        &sbx,
        "cat /data/private >/dev/null 2>&1 || echo denied; cat /data/public",
    );
    assert_eq!(stdout(&o), "denied\nIMAGE-PUBLIC", "{}", stderr(&o));
    let rt = runtime();
    let c = rt.block_on(s.client());
    for p in ["/data/private", "/data/link"] {
        let e = rt.block_on(download(&c, &sbx, p)).unwrap_err();
        assert_eq!(e.code, "permission_denied", "{p}: {e:?}");
    }
    let f = rt.block_on(download(&c, &sbx, "/data/public")).unwrap();
    assert_eq!(f, b"IMAGE-PUBLIC");
}
both_runtimes!(
    image_files_the_sandbox_cannot_read_are_not_served,
    image_files_the_sandbox_cannot_read_are_not_served
);

/// A burst of requests (more than pid 1 runs helpers for at once): every one is answered —
/// served or refused with a stable code — and pid 1 keeps serving and reaping.
fn a_burst_of_file_requests_is_bounded_and_answered(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let o = s.sh_in(
        &sbx,
        "echo data > /workspace/f && mkfifo /workspace/p && echo ok",
    );
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    let rt = runtime();
    let c = std::sync::Arc::new(rt.block_on(s.client()));
    let results = rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..48 {
            let (c, sbx) = (c.clone(), sbx.clone());
            let path = if i % 2 == 0 {
                "/workspace/f"
            } else {
                "/workspace/p"
            };
            tasks.push(tokio::spawn(async move {
                tokio::time::timeout(std::time::Duration::from_secs(60), download(&c, &sbx, path))
                    .await
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap().expect("a file request hung"));
        }
        out
    });
    let mut served = 0;
    for r in results {
        match r {
            Ok(bytes) => {
                assert_eq!(bytes, b"data\n");
                served += 1;
            }
            Err(e) => assert!(
                ["invalid_argument", "file_not_readable"].contains(&e.code.as_str()),
                "{e:?}"
            ),
        }
    }
    assert!(served > 0);
    let o = s.sh_in(&sbx, "echo alive");
    assert_eq!(stdout(&o), "alive\n", "{}", stderr(&o));
}
both_runtimes!(
    a_burst_of_file_requests_is_bounded_and_answered,
    a_burst_of_file_requests_is_bounded_and_answered
);
