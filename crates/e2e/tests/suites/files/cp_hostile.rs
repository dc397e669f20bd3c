//! `cleanroom cp` treats what a sandbox sends as hostile data (issue 30, class 1): real
//! server, real sandboxes, the real CLI (as root, like it usually runs). A sandbox plants
//! links and predictable names in one download and tries to have the next one write outside
//! the destination; it sends setuid files and FIFOs; an uploaded tar stream names entries
//! with `..` or a root. Nothing may land outside DEST, and refusals carry stable codes.

use cleanroom_e2e::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(o), stderr(o));
}

/// Everything under `dir`, for "nothing was written here" assertions.
fn contents(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// A host directory outside DEST (world-writable, like /tmp) and DEST itself.
fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o777)).unwrap();
    let dest = tmp.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    (tmp, outside, dest)
}

fn links_an_earlier_download_placed_are_never_followed(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let (_tmp, outside, dest) = dirs();
    let out = outside.display();
    let o = s.sh_in(
        &sbx,
        &format!(
            "mkdir -p /workspace/w/d && ln -s {out} /workspace/w/out && ln -s {out} /workspace/w/d/link \
             && ln -s {out}/f1 /workspace/w/f1 && echo fine > /workspace/w/d/fine && echo ok"
        ),
    );
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    // The first download recreates the links as links.
    ok(&s.run(&["cp", &format!("{sbx}:/workspace/w"), dest.to_str().unwrap()]));
    assert!(is_link(&dest.join("w/out")) && is_link(&dest.join("w/d/link")));
    assert_eq!(
        std::fs::read_to_string(dest.join("w/d/fine")).unwrap(),
        "fine\n"
    );
    // The sandbox swaps each link for a real directory (or file) with bytes in it.
    let o = s.sh_in(
        &sbx,
        "cd /workspace/w && rm out d/link f1 && mkdir out d/link && echo pwned > out/pwned \
         && echo pwned > d/link/pwned && echo pwned > f1 && echo ok",
    );
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    // DEST/<base> is the link: refused, not merged through.
    let o = s.run(&[
        "cp",
        &format!("{sbx}:/workspace/w/out"),
        dest.join("w").to_str().unwrap(),
    ]);
    assert_code(&o, "destination_is_link");
    // One file onto the link: refused.
    let o = s.run(&[
        "cp",
        &format!("{sbx}:/workspace/w/f1"),
        dest.join("w").to_str().unwrap(),
    ]);
    assert_code(&o, "destination_is_link");
    // A directory beneath DEST is the link: refused.
    let o = s.run(&["cp", &format!("{sbx}:/workspace/w"), dest.to_str().unwrap()]);
    assert_code(&o, "destination_is_link");
    assert_eq!(contents(&outside), Vec::<String>::new());
    assert!(is_link(&dest.join("w/out")) && is_link(&dest.join("w/d/link")));
}
both_runtimes!(
    links_an_earlier_download_placed_are_never_followed,
    links_an_earlier_download_placed_are_never_followed
);

fn a_planted_partial_name_is_never_opened(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let (_tmp, outside, dest) = dirs();
    // The CLI runs as pid 1 of a new pid namespace below, so a partial name derived from the
    // pid (`.f.cleanroom-partial-1`) is predictable: plant it, dangling into `outside`.
    let o = s.sh_in(
        &sbx,
        &format!(
            "mkdir -p /workspace/p && ln -s {}/victim /workspace/p/.f.cleanroom-partial-1 \
             && echo chosen-bytes > /workspace/f && echo ok",
            outside.display()
        ),
    );
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    ok(&s.run(&["cp", &format!("{sbx}:/workspace/p"), dest.to_str().unwrap()]));
    assert!(is_link(&dest.join("p/.f.cleanroom-partial-1")));
    let mut c = Command::new("unshare");
    c.args(["--pid", "--fork", "--", BIN, "cp"])
        .arg(format!("{sbx}:/workspace/f"))
        .arg(dest.join("p"))
        .env("CLEANROOM_HOST", s.host())
        .stdin(std::process::Stdio::null());
    let o = output_with_timeout(c, Duration::from_secs(120));
    ok(&o);
    assert_eq!(contents(&outside), Vec::<String>::new());
    let f = dest.join("p/f");
    assert!(!is_link(&f));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "chosen-bytes\n");
    // The planted name was left alone, and no partial file stayed behind.
    assert!(is_link(&dest.join("p/.f.cleanroom-partial-1")));
    let left: Vec<String> = contents(&dest.join("p"))
        .into_iter()
        .filter(|n| n.contains("cleanroom-partial") && n != ".f.cleanroom-partial-1")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
both_runtimes!(
    a_planted_partial_name_is_never_opened,
    a_planted_partial_name_is_never_opened
);

fn setuid_bits_and_fifos_are_not_recreated(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let (_tmp, _outside, dest) = dirs();
    let o = s.sh_in(
        &sbx,
        "mkdir -p /workspace/m && cd /workspace/m && echo x > suid && chmod 6755 suid \
         && mkdir sticky && chmod 1777 sticky && mkfifo fifo && echo ok",
    );
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    ok(&s.run(&["cp", &format!("{sbx}:/workspace/m"), dest.to_str().unwrap()]));
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&dest.join("m/suid")), 0o755);
    assert_eq!(mode(&dest.join("m/sticky")) & 0o7000, 0);
    assert!(std::fs::symlink_metadata(dest.join("m/fifo")).is_err());
    ok(&s.run(&[
        "cp",
        &format!("{sbx}:/workspace/m/suid"),
        dest.join("one").to_str().unwrap(),
    ]));
    assert_eq!(mode(&dest.join("one")), 0o755);
}
both_runtimes!(
    setuid_bits_and_fifos_are_not_recreated,
    setuid_bits_and_fifos_are_not_recreated
);

/// A tar stream with the given (name, content) regular files, names written as given (the
/// `tar` crate's setters refuse `..` and roots; a hostile stream need not).
fn raw_tar(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in entries {
        let mut h = tar::Header::new_old();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_size(data.len() as u64);
        h.set_cksum();
        b.append(&h, data.as_bytes()).unwrap();
    }
    b.into_inner().unwrap()
}

fn tar_uploads_refuse_dotdot_and_absolute_names_by_name(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let o = s.sh_in(&sbx, "mkdir -p /workspace/up/in && echo ok");
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["../escaped", "/abs-escaped", "sub/../../escaped2"] {
        let t = tmp.path().join("t.tar");
        std::fs::write(&t, raw_tar(&[("first.txt", "first\n"), (bad, "bad\n")])).unwrap();
        let mut c = s.cli();
        c.args(["cp", "-", &format!("{sbx}:/workspace/up/in")])
            .stdin(std::fs::File::open(&t).unwrap());
        let o = output_with_timeout(c, Duration::from_secs(120));
        assert_code(&o, "unsafe_archive_entry");
        assert!(stderr(&o).contains(&format!("{bad:?}")), "{}", stderr(&o));
        // Refused as a whole: nothing extracted, nothing rewritten.
        let o = s.sh_in(
            &sbx,
            "ls -A /workspace/up/in; ls /workspace/up/escaped /abs-escaped /workspace/escaped2 \
             /workspace/up/in/abs-escaped 2>/dev/null; echo end",
        );
        assert_eq!(stdout(&o), "end\n", "{bad}: {}", stderr(&o));
    }
}
both_runtimes!(
    tar_uploads_refuse_dotdot_and_absolute_names_by_name,
    tar_uploads_refuse_dotdot_and_absolute_names_by_name
);
