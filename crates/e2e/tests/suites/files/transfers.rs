//! The files API (`FileService`, `cleanroom cp`) end to end: real server, real sandboxes,
//! real processes. Every operation runs with the sandbox's own identity, so links the
//! sandbox plants cannot redirect a transfer to anything the sandbox could not touch
//! itself; writes are bounded by the sandbox's disk limit; uploads survive an interrupted
//! client; other principals see nothing.

use cleanroom_client::api::*;
use cleanroom_client::files::{self as cf, UploadOptions};
use cleanroom_client::{ApiError, Client};
use cleanroom_e2e::*;
use sha2::Digest;
use std::io::{BufRead, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

const MIB: u64 = 1 << 20;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A sandbox with explicit limits.
fn create(s: &Server, rt: Runtime, memory_mb: u32, disk_mb: u32) -> String {
    let o = s.run(&[
        "sandbox",
        "create",
        "--runtime",
        rt.name(),
        "--memory-mb",
        &memory_mb.to_string(),
        "--disk-mb",
        &disk_mb.to_string(),
    ]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "create: {}", stderr(&o));
    id
}

/// `size` pseudo-random bytes at `path` (xorshift: fast, incompressible); their sha256.
fn random_file(path: &Path, size: u64, seed: u64) -> String {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut h = sha2::Sha256::new();
    let mut x = seed | 1;
    let mut buf = vec![0u8; MIB as usize];
    let mut left = size;
    while left > 0 {
        for chunk in buf.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n]).unwrap();
        h.update(&buf[..n]);
        left -= n as u64;
    }
    f.flush().unwrap();
    hex(&h.finalize())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha_of_file(path: &Path) -> String {
    use std::io::Read;
    let mut f = std::fs::File::open(path).unwrap();
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; MIB as usize];
    loop {
        match f.read(&mut buf).unwrap() {
            0 => break,
            n => h.update(&buf[..n]),
        }
    }
    hex(&h.finalize())
}

fn json(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(o), stderr(o));
    serde_json::from_slice(&o.stdout).expect("json summary")
}

/// The sandbox's own view: `sha256sum` of a file inside it.
fn sha_in(s: &Server, sbx: &str, path: &str) -> String {
    let o = s.sh_in(sbx, &format!("sha256sum {path}"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string()
}

/// One-call write (no upload id, finish).
async fn write(
    c: &Client,
    sbx: &str,
    path: &str,
    data: &[u8],
    opts: SandboxFileWriteOptions,
) -> Result<WriteSandboxFileResponse, ApiError> {
    let req = WriteSandboxFileRequest {
        sandbox_id: sbx.into(),
        path: path.into(),
        data: data.to_vec(),
        finish: true,
        options: buffa::MessageField::some(opts),
        ..Default::default()
    };
    api(c.files.write_sandbox_file(req).await).map(|r| r.into_owned())
}

async fn read(c: &Client, sbx: &str, path: &str) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::new();
    cf::download(c, sbx, path, 0, &mut out, &|_| {}).await?;
    Ok(out)
}

async fn archive(c: &Client, sbx: &str, path: &str) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::new();
    cf::download_archive(c, sbx, path, &mut out, &|_| {}).await?;
    Ok(out)
}

fn code<T: std::fmt::Debug>(r: Result<T, ApiError>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.code,
    }
}

/// Peak resident memory of a process (KiB).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn upload_and_download_256_mib_byte_exact(rt: Runtime) {
    let s = Server::start();
    let sbx = create(&s, rt, 1024, 512);
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("big.bin");
    let want = random_file(&src, 256 * MIB, 0x5eed);
    let dst = format!("{sbx}:/workspace/big.bin");
    let up = json(&s.run(&["cp", "--json", src.to_str().unwrap(), &dst]));
    assert_eq!(up["bytes"], 256 * MIB, "{up}");
    assert_eq!(up["sha256"], want.as_str(), "{up}");
    assert_eq!(sha_in(&s, &sbx, "/workspace/big.bin"), want);
    let back = tmp.path().join("back.bin");
    let down = json(&s.run(&["cp", "--json", &dst, back.to_str().unwrap()]));
    assert_eq!(down["bytes"], 256 * MIB, "{down}");
    assert_eq!(down["sha256"], want.as_str(), "{down}");
    assert_eq!(sha_of_file(&back), want);
    // Streamed, never buffered whole: the server's peak memory stays far below the file.
    let pid = s.child.as_ref().unwrap().id();
    let peak = peak_rss_kib(pid);
    assert!(peak < 200 * 1024, "server peak RSS {peak} KiB");
}
both_runtimes!(
    upload_and_download_256_mib_byte_exact,
    upload_and_download_256_mib_byte_exact
);

fn interrupted_upload_resumes_from_the_server_reported_offset(rt: Runtime) {
    let s = Server::start();
    let sbx = create(&s, rt, 1024, 512);
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("r.bin");
    let size = 128 * MIB;
    let want = random_file(&src, size, 7);
    let dst = format!("{sbx}:/workspace/r.bin");
    // A real client process, really killed mid-upload.
    let mut cp = s.cli();
    cp.args(["cp", "--no-progress", src.to_str().unwrap(), &dst])
        .stderr(Stdio::piped());
    let mut child = cp.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(rest) = line.split("upload ").nth(1) {
                let id: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
                let _ = tx.send(id);
            }
        }
    });
    let id = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("cp announced its upload id");
    assert!(id.starts_with("upl_"), "{id}");
    let rt = runtime();
    let c = rt.block_on(s.client());
    let status = |c: &Client| rt.block_on(cf::upload_status(c, &sbx, &id));
    assert!(
        eventually(Duration::from_secs(120), || status(&c)
            .map(|u| u.offset >= 4 * MIB)
            .unwrap_or(false)),
        "the upload never got going"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // A chunk in flight when the client died may still land: wait for a stable offset.
    let mut offset = status(&c).unwrap().offset;
    loop {
        std::thread::sleep(Duration::from_millis(700));
        let now = status(&c).unwrap().offset;
        if now == offset {
            break;
        }
        offset = now;
    }
    assert!(offset > 0 && offset < size, "interrupted at {offset}");
    assert_eq!(offset % (2 * MIB), 0, "offsets are whole chunks: {offset}");
    // Nothing is visible at the path before the commit.
    let e = rt.block_on(cf::stat(&c, &sbx, "/workspace/r.bin", false));
    assert_eq!(code(e), "file_not_found");
    // A chunk at the wrong offset says where the upload stands.
    let req = WriteSandboxFileRequest {
        sandbox_id: sbx.clone(),
        upload_id: id.clone(),
        offset: offset + 1,
        data: vec![0],
        ..Default::default()
    };
    let e = rt
        .block_on(async { api(c.files.write_sandbox_file(req).await) })
        .map(|_| ())
        .expect_err("mismatch");
    assert_eq!(e.code, "upload_offset_mismatch");
    assert!(
        e.details.contains(&("offset".into(), offset.to_string())),
        "{e:?}"
    );
    // Resume with the CLI: from the server's offset, to the whole file.
    let done = json(&s.run(&["cp", "--json", "--resume", &id, src.to_str().unwrap(), &dst]));
    assert_eq!(done["resumed_from"], offset, "{done}");
    assert_eq!(done["bytes"], size, "{done}");
    assert_eq!(done["sha256"], want.as_str(), "{done}");
    assert_eq!(sha_in(&s, &sbx, "/workspace/r.bin"), want);
    // The upload is over.
    assert_eq!(code(status(&c)), "upload_not_found");
}
both_runtimes!(
    interrupted_upload_resumes_from_the_server_reported_offset,
    interrupted_upload_resumes_from_the_server_reported_offset
);

fn writes_beyond_the_disk_limit_are_refused_and_leave_nothing(rt: Runtime) {
    let s = Server::start();
    let sbx = create(&s, rt, 512, 16);
    let rt = runtime();
    let c = rt.block_on(s.client());
    // Chunk by chunk through the API (no size announced): the sandbox's filesystem fills.
    let chunk = vec![0x5au8; 2 * MIB as usize];
    let (mut upload_id, mut offset) = (String::new(), 0u64);
    let err = loop {
        let req = WriteSandboxFileRequest {
            sandbox_id: sbx.clone(),
            path: if upload_id.is_empty() {
                "/workspace/full.bin".into()
            } else {
                String::new()
            },
            upload_id: upload_id.clone(),
            offset,
            data: chunk.clone(),
            ..Default::default()
        };
        match rt.block_on(async { api(c.files.write_sandbox_file(req).await) }) {
            Ok(r) => {
                let r = r.into_owned();
                upload_id = r.upload_id;
                offset = r.offset;
                assert!(
                    offset <= 32 * MIB,
                    "wrote {offset} bytes under a 16 MiB limit"
                );
            }
            Err(e) => break e,
        }
    };
    assert_eq!(err.code, "resource_exhausted", "{err:?}");
    assert_eq!(err.connect_code, "resource_exhausted", "{err:?}");
    // Nothing partial is visible, the space is free again, the upload is gone.
    let o = s.sh_in(
        &sbx,
        "ls -A /workspace; df -k /workspace | awk 'NR==2{print \"used=\" $3}'",
    );
    let out = stdout(&o);
    assert!(
        !out.contains("full.bin") && !out.contains("cleanroom"),
        "{out}"
    );
    let used: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("used="))
        .and_then(|v| v.trim().parse().ok())
        .expect("df");
    assert!(used < 1024, "{used} KiB still used: {out}");
    if !upload_id.is_empty() {
        let e = rt.block_on(cf::upload_status(&c, &sbx, &upload_id));
        assert_eq!(code(e), "upload_not_found");
    }
    // The CLI announces the size: refused before a byte is sent, with the same code.
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("big");
    random_file(&src, 32 * MIB, 3);
    let o = s.run(&["cp", src.to_str().unwrap(), &format!("{sbx}:/workspace/")]);
    assert_code(&o, "resource_exhausted");
    assert!(stdout(&s.sh_in(&sbx, "ls -A /workspace")).trim().is_empty());
    // The sandbox is still fine for what fits.
    let r = rt
        .block_on(write(
            &c,
            &sbx,
            "/workspace/small",
            b"fits",
            Default::default(),
        ))
        .unwrap();
    assert!(r.finished);
    assert_eq!(
        rt.block_on(read(&c, &sbx, "/workspace/small")).unwrap(),
        b"fits"
    );
}
both_runtimes!(
    writes_beyond_the_disk_limit_are_refused_and_leave_nothing,
    writes_beyond_the_disk_limit_are_refused_and_leave_nothing
);

/// Host files the sandbox may see but not read or write: a directory in the sandbox's
/// read-only view of /etc with a root-only key and a world-readable victim, plus a
/// host-only directory under /tmp (the sandbox's /tmp is its own).
struct HostFiles {
    etc: PathBuf,
    tmp: PathBuf,
}

const SECRET: &[u8] = b"HOST-ONLY-FILES-TEST-SECRET";
const VICTIM: &[u8] = b"victim stays intact";

impl HostFiles {
    fn new() -> HostFiles {
        let tag = format!("{}-{:x}", std::process::id(), rand_tag());
        let etc = PathBuf::from(format!("/etc/cleanroom-files-test-{tag}"));
        std::fs::create_dir(&etc).unwrap();
        std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(etc.join("key"), SECRET).unwrap();
        std::fs::set_permissions(etc.join("key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(etc.join("victim"), VICTIM).unwrap();
        std::fs::set_permissions(etc.join("victim"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let tmp = PathBuf::from(format!("/tmp/cleanroom-files-test-{tag}"));
        std::fs::create_dir(&tmp).unwrap();
        std::fs::write(tmp.join("victim"), VICTIM).unwrap();
        HostFiles { etc, tmp }
    }

    fn intact(&self) {
        assert_eq!(std::fs::read(self.etc.join("victim")).unwrap(), VICTIM);
        assert_eq!(std::fs::read(self.etc.join("key")).unwrap(), SECRET);
        assert_eq!(std::fs::read(self.tmp.join("victim")).unwrap(), VICTIM);
        let names = |d: &Path| -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&self.etc), ["key", "victim"]);
        assert_eq!(names(&self.tmp), ["victim"]);
    }
}

impl Drop for HostFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.etc);
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

fn rand_tag() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn no_secret(bytes: &[u8]) {
    assert!(
        !bytes.windows(SECRET.len()).any(|w| w == SECRET),
        "the host secret leaked"
    );
}

fn symlinks_planted_by_the_sandbox_cannot_redirect_uploads_or_downloads(rt: Runtime) {
    let host = HostFiles::new();
    let s = Server::start();
    let sbx = create(&s, rt, 512, 64);
    let (etc, tmp) = (
        host.etc.display().to_string(),
        host.tmp.display().to_string(),
    );
    let etc_rel = etc.trim_start_matches('/');
    let plant = format!(
        "set -e; cd /workspace
         ln -s {etc}/victim abs
         ln -s ../{etc_rel}/victim rel
         ln -s chain2 chain1; ln -s chain3 chain2; ln -s {etc}/key chain3
         ln -s {etc}/key keylink
         ln -s {etc} dirlink
         ln -s /proc/self procdir
         ln -s /proc/1/environ environ
         ln -s {tmp}/victim hostvictim
         ln -s {tmp} hostdir
         cat {etc}/key 2>/dev/null && exit 3 || true"
    );
    let o = s.sh_in(&sbx, &plant);
    assert_eq!(o.status.code(), Some(0), "plant: {}", stderr(&o));
    let rt = runtime();
    let c = rt.block_on(s.client());
    let opts = SandboxFileWriteOptions::default;

    // Downloads through every link: never the secret; the sandbox's own answer.
    for p in [
        "/workspace/keylink",
        "/workspace/chain1",
        "/workspace/dirlink/key",
    ] {
        assert_eq!(
            code(rt.block_on(read(&c, &sbx, p))),
            "permission_denied",
            "{p}"
        );
    }
    assert_eq!(
        code(rt.block_on(read(&c, &sbx, &format!("{etc}/key")))),
        "permission_denied"
    );
    assert_eq!(
        code(rt.block_on(read(&c, &sbx, "/workspace/environ"))),
        "file_not_readable"
    );
    // A host-only path: the sandbox's /tmp has no such directory.
    assert_eq!(
        code(rt.block_on(read(&c, &sbx, "/workspace/hostvictim"))),
        "file_not_found"
    );
    // Archives: links are archived as links, the key is never read.
    let a = rt.block_on(archive(&c, &sbx, "/workspace")).unwrap();
    no_secret(&a);
    let mut names = Vec::new();
    let mut ar = tar::Archive::new(&a[..]);
    for e in ar.entries().unwrap() {
        let e = e.unwrap();
        names.push((
            e.path().unwrap().display().to_string(),
            e.header().entry_type(),
        ));
    }
    assert!(
        names.contains(&("workspace/dirlink".into(), tar::EntryType::Symlink)),
        "{names:?}"
    );
    match rt.block_on(archive(&c, &sbx, &etc)) {
        Ok(bytes) => panic!(
            "archive of an unreadable key succeeded ({} bytes)",
            bytes.len()
        ),
        Err(e) => assert_eq!(e.code, "permission_denied"),
    }
    match rt.block_on(archive(&c, &sbx, "/workspace/procdir")) {
        // The link itself, nothing of /proc.
        Ok(bytes) => assert!(bytes.len() < 4096, "{} bytes", bytes.len()),
        Err(e) => panic!("{e:?}"),
    }

    // Uploads: into the read-only view is the sandbox's own permission_denied; onto a
    // link replaces the link (in the sandbox) and never writes its target.
    for p in [
        "/workspace/dirlink/victim",
        "/workspace/dirlink/new",
        &format!("{etc}/victim"),
    ] {
        let r = rt.block_on(write(&c, &sbx, p, b"overwritten", opts()));
        assert_eq!(code(r), "permission_denied", "{p}");
    }
    let r = rt.block_on(write(&c, &sbx, "/workspace/hostdir/new", b"x", opts()));
    assert_eq!(code(r), "file_not_found");
    assert!(rt
        .block_on(write(&c, &sbx, "/workspace/procdir/x", b"x", opts()))
        .is_err());
    for p in [
        "/workspace/abs",
        "/workspace/rel",
        "/workspace/chain1",
        "/workspace/hostvictim",
    ] {
        let r = rt.block_on(write(&c, &sbx, p, b"mine", opts())).unwrap();
        assert!(r.finished, "{p}");
        let info = rt.block_on(cf::stat(&c, &sbx, p, false)).unwrap();
        assert_eq!(
            info.r#type.as_known(),
            Some(SandboxFileType::SANDBOX_FILE_TYPE_REGULAR),
            "{p}"
        );
    }
    // The remaining links of the chain still point where they did.
    let o = s.sh_in(&sbx, "readlink /workspace/chain2; cat /workspace/abs");
    assert_eq!(stdout(&o), "chain3\nmine");
    host.intact();

    // A race: the sandbox swaps a name between its own directory and the host view
    // while uploads and downloads go through it.
    let o = s.sh_in(
        &sbx,
        "mkdir -p /workspace/own && echo mine > /workspace/own/key && echo mine > /workspace/own/victim",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut swapper = s.cli();
    swapper.args([
        "exec",
        "-n",
        "--in",
        &sbx,
        "--",
        "sh",
        "-c",
        &format!(
            "end=$(($(date +%s)+60)); while [ $(date +%s) -lt $end ]; do \
             ln -sfn {etc} /workspace/race; ln -sfn /workspace/own /workspace/race; done"
        ),
    ]);
    swapper.stdout(Stdio::null()).stderr(Stdio::null());
    let mut swapper = swapper.spawn().unwrap();
    let (mut served, mut refused) = (0, 0);
    for i in 0..40 {
        match rt.block_on(read(&c, &sbx, "/workspace/race/key")) {
            Ok(bytes) => {
                no_secret(&bytes);
                assert_eq!(bytes, b"mine\n");
                served += 1;
            }
            Err(e) => {
                assert!(
                    ["permission_denied", "file_not_found"].contains(&e.code.as_str()),
                    "{e:?}"
                );
                refused += 1;
            }
        }
        let r = rt.block_on(write(
            &c,
            &sbx,
            "/workspace/race/victim",
            format!("{i}").as_bytes(),
            opts(),
        ));
        if let Err(e) = r {
            assert!(
                ["permission_denied", "file_not_found"].contains(&e.code.as_str()),
                "{e:?}"
            );
        }
    }
    let _ = swapper.kill();
    let _ = swapper.wait();
    assert!(served + refused == 40);
    host.intact();
}
both_runtimes!(
    symlinks_planted_by_the_sandbox_cannot_redirect_uploads_or_downloads,
    symlinks_planted_by_the_sandbox_cannot_redirect_uploads_or_downloads
);

fn permission_errors_are_the_sandboxs_own(rt: Runtime) {
    let host = HostFiles::new();
    let s = Server::start();
    let sbx = create(&s, rt, 512, 64);
    let rt = runtime();
    let c = rt.block_on(s.client());
    // What the sandbox itself cannot do.
    let o = s.sh_in(
        &sbx,
        "echo x > /workspace/locked; chmod 000 /workspace/locked; \
         cat /workspace/locked 2>/dev/null && exit 3; \
         echo y > /tmp/f; chown 1234 /tmp/f 2>/dev/null && exit 4; \
         touch /usr/cleanroom-x 2>/dev/null && exit 5; exit 0",
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // ... is refused through the API with permission_denied.
    assert_eq!(
        code(rt.block_on(read(&c, &sbx, "/workspace/locked"))),
        "permission_denied"
    );
    let owned = SandboxFileWriteOptions {
        uid: Some(1234),
        ..Default::default()
    };
    assert_eq!(
        code(rt.block_on(write(&c, &sbx, "/tmp/owned", b"x", owned))),
        "permission_denied"
    );
    assert_eq!(
        code(rt.block_on(write(
            &c,
            &sbx,
            "/usr/cleanroom-x",
            b"x",
            Default::default()
        ))),
        "permission_denied"
    );
    let mk = |path: &str| MakeSandboxDirectoryRequest {
        sandbox_id: sbx.clone(),
        path: path.into(),
        ..Default::default()
    };
    let e = rt
        .block_on(async { api(c.files.make_sandbox_directory(mk("/etc/cleanroom-x")).await) })
        .err()
        .unwrap();
    assert_eq!(e.code, "permission_denied");
    let rm = RemoveSandboxFileRequest {
        sandbox_id: sbx.clone(),
        path: format!("{}/victim", host.etc.display()),
        ..Default::default()
    };
    let e = rt
        .block_on(async { api(c.files.remove_sandbox_file(rm).await) })
        .err()
        .unwrap();
    assert_eq!(e.code, "permission_denied");
    // Through the CLI: the stable code on stderr, exit 125.
    let o = s.run(&["cp", &format!("{sbx}:/workspace/locked"), "-"]);
    assert_code(&o, "permission_denied");
    // Its own uid (0 in its namespace) and mode are fine.
    let mine = SandboxFileWriteOptions {
        uid: Some(0),
        gid: Some(0),
        mode: 0o750,
        ..Default::default()
    };
    let r = rt
        .block_on(write(&c, &sbx, "/tmp/mine", b"x", mine))
        .unwrap();
    let f = r.file.as_option().unwrap();
    assert_eq!((f.mode, f.uid, f.gid), (0o750, 0, 0));
    host.intact();
}
both_runtimes!(
    permission_errors_are_the_sandboxs_own,
    permission_errors_are_the_sandboxs_own
);

fn list_stat_mkdir_remove(rt: Runtime) {
    let s = Server::start();
    let sbx = create(&s, rt, 512, 64);
    let rt = runtime();
    let c = rt.block_on(s.client());
    let id = sbx.clone();
    rt.block_on(async move {
        let mk = |path: &str, parents: bool| MakeSandboxDirectoryRequest {
            sandbox_id: id.clone(),
            path: path.into(),
            mode: 0o750,
            parents,
            ..Default::default()
        };
        let d = api(c
            .files
            .make_sandbox_directory(mk("/workspace/a/b/c", true))
            .await)
        .unwrap()
        .into_owned();
        let d = d.directory.as_option().unwrap();
        assert_eq!(d.path, "/workspace/a/b/c");
        assert_eq!(d.mode, 0o750);
        assert_eq!(
            d.r#type.as_known(),
            Some(SandboxFileType::SANDBOX_FILE_TYPE_DIRECTORY)
        );
        // Again: with parents fine, without it file_exists.
        api(c
            .files
            .make_sandbox_directory(mk("/workspace/a/b/c", true))
            .await)
        .unwrap();
        let e = api(c
            .files
            .make_sandbox_directory(mk("/workspace/a/b/c", false))
            .await)
        .err()
        .unwrap();
        assert_eq!(e.code, "file_exists");
        let e = api(c
            .files
            .make_sandbox_directory(mk("/workspace/x/y", false))
            .await)
        .err()
        .unwrap();
        assert_eq!(e.code, "file_not_found");
        for name in ["zeta", "alpha", "mid"] {
            write(
                &c,
                &id,
                &format!("/workspace/a/b/{name}"),
                name.as_bytes(),
                Default::default(),
            )
            .await
            .unwrap();
        }
        let opts = SandboxFileWriteOptions {
            no_overwrite: true,
            ..Default::default()
        };
        let e = write(&c, &id, "/workspace/a/b/mid", b"again", opts)
            .await
            .err()
            .unwrap();
        assert_eq!(e.code, "file_exists");
        let e = write(
            &c,
            &id,
            "/workspace/a/b/c",
            b"onto a dir",
            Default::default(),
        )
        .await
        .err()
        .unwrap();
        assert_eq!(e.code, "file_type_mismatch");
        // create_parents.
        let opts = SandboxFileWriteOptions {
            create_parents: true,
            ..Default::default()
        };
        write(&c, &id, "/workspace/new/deep/f", b"deep", opts)
            .await
            .unwrap();
        assert_eq!(
            read(&c, &id, "/workspace/new/deep/f").await.unwrap(),
            b"deep"
        );

        let names: Vec<String> = cf::list_all(&c, &id, "/workspace/a/b")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["alpha", "c", "mid", "zeta"]);
        // Paging.
        let page = |after: &str| ListSandboxFilesRequest {
            sandbox_id: id.clone(),
            path: "/workspace/a/b".into(),
            start_after: after.into(),
            max_entries: 2,
            ..Default::default()
        };
        let p1 = api(c.files.list_sandbox_files(page("")).await)
            .unwrap()
            .into_owned();
        assert!(p1.truncated);
        assert_eq!(p1.entries.len(), 2);
        let p2 = api(c.files.list_sandbox_files(page("c")).await)
            .unwrap()
            .into_owned();
        assert!(!p2.truncated);
        let n2: Vec<&str> = p2.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(n2, ["mid", "zeta"]);
        let st = cf::stat(&c, &id, "/workspace/a/b/zeta", false)
            .await
            .unwrap();
        assert_eq!((st.size, st.mode), (4, 0o644));
        write(&c, &id, "/workspace/plain", b"p", Default::default())
            .await
            .unwrap();
        let rm = |path: &str, recursive: bool, missing_ok: bool| RemoveSandboxFileRequest {
            sandbox_id: id.clone(),
            path: path.into(),
            recursive,
            missing_ok,
            ..Default::default()
        };
        let e = api(c
            .files
            .remove_sandbox_file(rm("/workspace/a", false, false))
            .await)
        .err()
        .unwrap();
        assert_eq!(e.code, "directory_not_empty");
        let r = api(c
            .files
            .remove_sandbox_file(rm("/workspace/a", true, false))
            .await)
        .unwrap()
        .into_owned();
        assert!(r.removed);
        assert_eq!(
            code(cf::stat(&c, &id, "/workspace/a", false).await),
            "file_not_found"
        );
        let r = api(c
            .files
            .remove_sandbox_file(rm("/workspace/a", true, true))
            .await)
        .unwrap()
        .into_owned();
        assert!(!r.removed);
        let e = api(c
            .files
            .remove_sandbox_file(rm("/workspace/a", true, false))
            .await)
        .err()
        .unwrap();
        assert_eq!(e.code, "file_not_found");
        // Malformed paths.
        for p in ["relative", "/workspace/../etc/passwd"] {
            assert_eq!(
                code(cf::stat(&c, &id, p, false).await),
                "invalid_argument",
                "{p}"
            );
        }
    });
    // Links, made by the sandbox.
    let o = s.sh_in(&sbx, "ln -s /workspace/plain /workspace/link");
    assert_eq!(o.status.code(), Some(0));
    let c = rt.block_on(s.client());
    // Many entries with long names: several pages, each answer bounded, all listed once.
    let o = s.sh_in(
        &sbx,
        "mkdir /workspace/many && cd /workspace/many && \
         n=0; while [ $n -lt 2500 ]; do : > \"$(printf 'entry-%04d-%0200d' $n 0)\"; n=$((n+1)); done",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let all = rt
        .block_on(cf::list_all(&c, &sbx, "/workspace/many"))
        .unwrap();
    assert_eq!(all.len(), 2500);
    assert!(all.windows(2).all(|w| w[0].name < w[1].name));
    let l = rt
        .block_on(cf::stat(&c, &sbx, "/workspace/link", false))
        .unwrap();
    assert_eq!(
        l.r#type.as_known(),
        Some(SandboxFileType::SANDBOX_FILE_TYPE_SYMLINK)
    );
    assert_eq!(l.symlink_target, "/workspace/plain");
    let f = rt
        .block_on(cf::stat(&c, &sbx, "/workspace/link", true))
        .unwrap();
    assert_eq!(
        f.r#type.as_known(),
        Some(SandboxFileType::SANDBOX_FILE_TYPE_REGULAR)
    );
    let req = RemoveSandboxFileRequest {
        sandbox_id: sbx.clone(),
        path: "/workspace/link".into(),
        ..Default::default()
    };
    rt.block_on(async { api(c.files.remove_sandbox_file(req).await) })
        .unwrap();
    assert_eq!(
        rt.block_on(read(&c, &sbx, "/workspace/plain")).unwrap(),
        b"p"
    );
}
both_runtimes!(list_stat_mkdir_remove, list_stat_mkdir_remove);

/// A local tree with nested directories, an executable, an empty file and a link.
fn local_tree(root: &Path) {
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::write(root.join("top.txt"), "top\n").unwrap();
    std::fs::write(root.join("sub/run.sh"), "#!/bin/sh\necho run\n").unwrap();
    std::fs::set_permissions(
        root.join("sub/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(root.join("sub/deeper/empty"), "").unwrap();
    std::os::unix::fs::symlink("../top.txt", root.join("sub/link")).unwrap();
}

/// (relative path, kind, mode, content or link target) of every entry, sorted.
fn tree_of(root: &Path) -> Vec<(String, String, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o777;
            if m.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.push((rel, "link".into(), 0, t.display().to_string().into_bytes()));
            } else if m.is_dir() {
                out.push((rel, "dir".into(), mode, vec![]));
                stack.push(p);
            } else {
                out.push((rel, "file".into(), mode, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn directory_tar_round_trip_through_cp(rt: Runtime) {
    let s = Server::start();
    let sbx = create(&s, rt, 512, 64);
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    local_tree(&tree);
    // Into an existing directory: lands as /workspace/tree.
    let o = s.run(&["cp", tree.to_str().unwrap(), &format!("{sbx}:/workspace/")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = s.sh_in(
        &sbx,
        "cd /workspace/tree && ./sub/run.sh && readlink sub/link",
    );
    assert_eq!(stdout(&o), "run\n../top.txt\n", "{}", stderr(&o));
    // Back to a new local directory: the same tree.
    let back = tmp.path().join("back");
    let o = s.run(&[
        "cp",
        &format!("{sbx}:/workspace/tree"),
        back.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(tree_of(&back), tree_of(&tree));
    // Into an existing local directory: as <dir>/tree.
    let into = tmp.path().join("into");
    std::fs::create_dir(&into).unwrap();
    let o = s.run(&[
        "cp",
        &format!("{sbx}:/workspace/tree"),
        into.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(tree_of(&into.join("tree")), tree_of(&tree));
    // To a sandbox path that does not exist yet: it becomes the copy.
    let o = s.run(&[
        "cp",
        "-p",
        tree.to_str().unwrap(),
        &format!("{sbx}:/tmp/fresh/copy"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = s.sh_in(&sbx, "cat /tmp/fresh/copy/top.txt");
    assert_eq!(stdout(&o), "top\n");
    // `-`: tar on stdin and stdout, like docker; --raw for one file's bytes.
    let tarball = tmp.path().join("t.tar");
    let st = std::process::Command::new("tar")
        .args([
            "-cf",
            tarball.to_str().unwrap(),
            "-C",
            tmp.path().to_str().unwrap(),
            "tree",
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let mut c = s.cli();
    c.args(["cp", "-", &format!("{sbx}:/root/")])
        .stdin(std::fs::File::open(&tarball).unwrap());
    let o = output_with_timeout(c, Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = s.run(&["cp", &format!("{sbx}:/root/tree"), "-"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut names: Vec<String> = tar::Archive::new(&o.stdout[..])
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    names.sort();
    assert!(names.contains(&"tree/sub/run.sh".to_string()), "{names:?}");
    let mut c = s.cli();
    c.args(["cp", "--raw", "-", &format!("{sbx}:/tmp/raw.txt")])
        .stdin(std::fs::File::open(tree.join("top.txt")).unwrap());
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = s.run(&["cp", "--raw", &format!("{sbx}:/tmp/raw.txt"), "-"]);
    assert_eq!(o.stdout, b"top\n");
    // A file to a local directory keeps its name; -o json summarises.
    let o = s.run(&[
        "cp",
        "-o",
        "json",
        &format!("{sbx}:/workspace/tree/sub/run.sh"),
        into.to_str().unwrap(),
    ]);
    let j = json(&o);
    assert_eq!(j["direction"], "download");
    assert_eq!(j["bytes"], 19);
    let m = std::fs::metadata(into.join("run.sh")).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o755);
}
both_runtimes!(
    directory_tar_round_trip_through_cp,
    directory_tar_round_trip_through_cp
);

const ALICE: &str = "alice-files-token-1b3d5f7a9c2e4a6c8e0b";
const BOB: &str = "bob-files-token-8e0b2d4f6a1c3e5a7c9e";

fn another_principal_cannot_touch_the_files_of_a_sandbox(rt: Runtime) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = write_tokens(
        dir.path(),
        &[(ALICE, "alice", "user"), (BOB, "bob", "user")],
    );
    let s = TcpServer::start("http", &["--tokens-file", tokens.to_str().unwrap()]);
    let create = |token| {
        let o = s.run(Some(token), &rt.args(2, &["sandbox", "create"]));
        let id = stdout(&o).trim().to_string();
        assert!(id.starts_with("sbx_"), "{}", stderr(&o));
        id
    };
    let (theirs, mine) = (create(ALICE), create(BOB));
    let rt = runtime();
    let alice = rt.block_on(client_as(&s.addr, ALICE));
    let bob = rt.block_on(client_as(&s.addr, BOB));
    rt.block_on(async {
        write(
            &alice,
            &theirs,
            "/workspace/private",
            b"alice's",
            Default::default(),
        )
        .await
        .unwrap();
        // An unfinished upload of Alice's.
        let req = WriteSandboxFileRequest {
            sandbox_id: theirs.clone(),
            path: "/workspace/partial".into(),
            data: b"half".to_vec(),
            ..Default::default()
        };
        let up = api(alice.files.write_sandbox_file(req).await)
            .unwrap()
            .into_owned();
        let upload_id = up.upload_id.clone();
        let nf = "sandbox_not_found";
        let p = "/workspace/private";
        assert_eq!(code(read(&bob, &theirs, p).await), nf);
        assert_eq!(code(archive(&bob, &theirs, "/workspace").await), nf);
        assert_eq!(code(cf::stat(&bob, &theirs, p, false).await), nf);
        assert_eq!(code(cf::list_all(&bob, &theirs, "/workspace").await), nf);
        assert_eq!(
            code(write(&bob, &theirs, p, b"bob's", Default::default()).await),
            nf
        );
        let mk = MakeSandboxDirectoryRequest {
            sandbox_id: theirs.clone(),
            path: "/workspace/bob".into(),
            ..Default::default()
        };
        assert_eq!(code(api(bob.files.make_sandbox_directory(mk).await)), nf);
        let rm = RemoveSandboxFileRequest {
            sandbox_id: theirs.clone(),
            path: p.into(),
            ..Default::default()
        };
        assert_eq!(code(api(bob.files.remove_sandbox_file(rm).await)), nf);
        assert_eq!(code(cf::upload_status(&bob, &theirs, &upload_id).await), nf);
        let cancel = CancelSandboxUploadRequest {
            sandbox_id: theirs.clone(),
            upload_id: upload_id.clone(),
            ..Default::default()
        };
        assert_eq!(code(api(bob.files.cancel_sandbox_upload(cancel).await)), nf);
        // Through Bob's own sandbox, Alice's upload does not exist.
        assert_eq!(
            code(cf::upload_status(&bob, &mine, &upload_id).await),
            "upload_not_found"
        );
        let req = WriteSandboxFileRequest {
            sandbox_id: mine.clone(),
            upload_id: upload_id.clone(),
            offset: 4,
            data: b"bob".to_vec(),
            finish: true,
            ..Default::default()
        };
        assert_eq!(
            code(api(bob.files.write_sandbox_file(req).await)),
            "upload_not_found"
        );
        let cancel = CancelSandboxUploadRequest {
            sandbox_id: mine.clone(),
            upload_id: upload_id.clone(),
            ..Default::default()
        };
        assert_eq!(
            code(api(bob.files.cancel_sandbox_upload(cancel).await)),
            "upload_not_found"
        );
        // Alice's file and upload are untouched; she finishes it.
        assert_eq!(read(&alice, &theirs, p).await.unwrap(), b"alice's");
        assert_eq!(
            cf::upload_status(&alice, &theirs, &upload_id)
                .await
                .unwrap()
                .offset,
            4
        );
        let req = WriteSandboxFileRequest {
            sandbox_id: theirs.clone(),
            upload_id: upload_id.clone(),
            offset: 4,
            data: b"-done".to_vec(),
            finish: true,
            ..Default::default()
        };
        let r = api(alice.files.write_sandbox_file(req).await)
            .unwrap()
            .into_owned();
        assert!(r.finished);
        assert_eq!(
            read(&alice, &theirs, "/workspace/partial").await.unwrap(),
            b"half-done"
        );
    });
    // The CLI with Bob's token: the same code.
    let o = s.run(
        Some(BOB),
        &["cp", &format!("{theirs}:/workspace/private"), "-"],
    );
    assert_code(&o, "sandbox_not_found");
}
both_runtimes!(
    another_principal_cannot_touch_the_files_of_a_sandbox,
    another_principal_cannot_touch_the_files_of_a_sandbox
);

fn uploads_from_the_client_crate_resume_with_their_prefix_hash(rt: Runtime) {
    // The SDK path: upload from a reader, stop after some chunks, resume from the offset
    // the server reports with the prefix's hash, and the server's end-to-end check passes.
    let s = Server::start();
    let sbx = create(&s, rt, 512, 128);
    let rt = runtime();
    let c = rt.block_on(s.client());
    let data: Vec<u8> = (0..(9 * MIB as usize))
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    rt.block_on(async {
        // Only the first 5 MiB reach the server (the reader is cut short, no finish).
        let req = |offset: u64, id: &str, chunk: &[u8]| WriteSandboxFileRequest {
            sandbox_id: sbx.clone(),
            path: if id.is_empty() {
                "/workspace/sdk.bin".into()
            } else {
                String::new()
            },
            upload_id: id.to_string(),
            offset,
            data: chunk.to_vec(),
            ..Default::default()
        };
        let r = api(c
            .files
            .write_sandbox_file(req(0, "", &data[..2 << 20]))
            .await)
        .unwrap()
        .into_owned();
        let id = r.upload_id.clone();
        api(c
            .files
            .write_sandbox_file(req(2 << 20, &id, &data[2 << 20..4 << 20]))
            .await)
        .unwrap();
        api(c
            .files
            .write_sandbox_file(req(4 << 20, &id, &data[4 << 20..5 << 20]))
            .await)
        .unwrap();
        let at = cf::upload_status(&c, &sbx, &id).await.unwrap().offset;
        assert_eq!(at, 5 << 20);
        let mut prefix = sha2::Sha256::new();
        prefix.update(&data[..at as usize]);
        let mut rest = &data[at as usize..];
        let resume = cf::Resume {
            upload_id: id.clone(),
            offset: at,
            prefix: Some(prefix),
        };
        let hooks = cf::Hooks {
            started: &mut |_| {},
            progress: &|_| {},
        };
        let done = cf::upload(
            &c,
            (&sbx, "/workspace/sdk.bin"),
            &mut rest,
            &UploadOptions::default(),
            Some(resume),
            hooks,
        )
        .await
        .unwrap();
        assert_eq!(done.resumed_from, at);
        assert_eq!(done.sha256, hex(&sha2::Sha256::digest(&data)));
        // Download from an offset.
        let mut tail = Vec::new();
        cf::download(&c, &sbx, "/workspace/sdk.bin", 7 << 20, &mut tail, &|_| {})
            .await
            .unwrap();
        assert_eq!(tail, &data[7 << 20..]);
        // A wrong whole-file hash drops the upload instead of committing it.
        let req = WriteSandboxFileRequest {
            sandbox_id: sbx.clone(),
            path: "/workspace/bad.bin".into(),
            data: b"abc".to_vec(),
            finish: true,
            sha256: "00".repeat(32),
            ..Default::default()
        };
        let e = api(c.files.write_sandbox_file(req).await).err().unwrap();
        assert_eq!(e.code, "invalid_argument");
        assert_eq!(
            code(cf::stat(&c, &sbx, "/workspace/bad.bin", false).await),
            "file_not_found"
        );
    });
}
both_runtimes!(
    uploads_from_the_client_crate_resume_with_their_prefix_hash,
    uploads_from_the_client_crate_resume_with_their_prefix_hash
);

fn image_files_follow_the_sandboxs_own_permissions(rt: Runtime) {
    use cleanroom_e2e::oci::{busybox_layer, Layer, Registry};
    let reg = Registry::start();
    let layer = Layer::default()
        .dir("data")
        .owned_file("data/private", b"IMAGE-PRIVATE", 0o600, 1000)
        .owned_file("data/rootonly", b"IMAGE-ROOT-ONLY", 0o600, 0)
        .file("data/public", b"IMAGE-PUBLIC", 0o644)
        .symlink("data/link", "/data/private")
        .gz();
    let reference = reg.push_image("test/files", &[busybox_layer(), layer]);
    let s = Server::start_with(&["--insecure-registry", &reg.host()]);
    let o = s.run(&rt.args(2, &["sandbox", "create", "--image", &reference]));
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}{}", stderr(&o), s.log());
    let own = |p: &str| {
        let o = s.sh_in(&sbx, &format!("cat {p} 2>/dev/null || echo DENIED"));
        stdout(&o)
    };
    let rt = runtime();
    let c = rt.block_on(s.client());
    // Exactly what the sandbox itself gets: denied stays denied, through links too.
    for p in ["/data/private", "/data/link", "/data/rootonly"] {
        let mine = own(p);
        match rt.block_on(read(&c, &sbx, p)) {
            Ok(bytes) => assert_eq!(String::from_utf8_lossy(&bytes), mine, "{p}"),
            Err(e) => {
                assert_eq!(
                    mine, "DENIED\n",
                    "{p}: the sandbox can read it, the API said {e:?}"
                );
                assert_eq!(e.code, "permission_denied", "{p}");
            }
        }
    }
    assert_eq!(own("/data/private"), "DENIED\n");
    match rt.block_on(archive(&c, &sbx, "/data")) {
        Ok(bytes) => panic!("an archive with an unreadable file ({} bytes)", bytes.len()),
        Err(e) => assert_eq!(e.code, "permission_denied"),
    }
    // Writes land in the sandbox's copy-on-write layer (anonymous temp file on overlayfs).
    let r = rt
        .block_on(write(
            &c,
            &sbx,
            "/data/public",
            b"replaced",
            Default::default(),
        ))
        .unwrap();
    assert!(r.finished);
    assert_eq!(own("/data/public"), "replaced");
    let r = rt
        .block_on(write(&c, &sbx, "/data/new", b"new", Default::default()))
        .unwrap();
    assert_eq!(r.file.as_option().unwrap().size, 3);
    assert_eq!(rt.block_on(read(&c, &sbx, "/data/new")).unwrap(), b"new");
}
both_runtimes!(
    image_files_follow_the_sandboxs_own_permissions,
    image_files_follow_the_sandboxs_own_permissions
);
