//! Image tags are pinned, never followed: `cleanroom image pull host/repo:TAG` has the
//! server resolve the tag once against a real registry (Debian's `docker-registry` on
//! loopback), pulls that digest, prints `host/repo:TAG@sha256:…`, and with `--pin` writes it
//! into `cleanroom.yaml` by editing that one line. Run time stays digest-only: a tag in a
//! policy or on `--image` is refused, and a pinned policy keeps its image when the tag moves.

use cleanroom_e2e::oci::{Layer, Registry, BUSYBOX};
use cleanroom_e2e::*;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

/// busybox, its shell and cat, and an /etc/os-release naming `which` image this is.
fn image_layer(which: &str) -> Vec<u8> {
    let busybox = std::fs::read(BUSYBOX).expect("busybox-static (scripts/deps.sh installs it)");
    Layer::new()
        .dir("bin")
        .dir("etc")
        .file("bin/busybox", &busybox, 0o755)
        .special("bin/sh", tar::EntryType::Symlink, "busybox")
        .special("bin/cat", tar::EntryType::Symlink, "busybox")
        .file("etc/os-release", format!("ID={which}\n").as_bytes(), 0o644)
        .gz()
}

/// The CLI against `s`, run in `dir` (where `./cleanroom.yaml` is looked up).
fn run_in(s: &Server, dir: &Path, args: &[&str]) -> Output {
    let mut c = s.cli();
    c.current_dir(dir).args(args);
    output_with_timeout(c, Duration::from_secs(120))
}

fn digest_of(reference: &str) -> String {
    reference.rsplit_once('@').unwrap().1.to_string()
}

const POLICY: &str = "# the team's policy\nversion: 1   # keep\n\nsandbox:\n  # base image: a tag, refused at run time until pinned\n  image:\n    ref: TAGREF   # python for CI\n  env:\n    GREETING: hi\n";

#[test]
fn a_tag_resolves_to_the_registrys_digest_and_pins_into_the_policy() {
    let reg = Registry::start();
    let first = reg.push_image("team/py", &[image_layer("first")]);
    let digest = digest_of(&first);
    // The digest the registry itself reports for the tag.
    let served = reg.tag("team/py", &digest, "3.12");
    assert_eq!(served, digest);
    let s = Server::start_with(&["--insecure-registry", &reg.host()]);
    let tagref = format!("{}/team/py:3.12", reg.host());
    let pinned = format!("{tagref}@{digest}");

    // Resolve + pull, JSON: the reference keeps the tag for readers, the digest is the pin.
    let o = s.run(&["-o", "json", "image", "pull", &tagref]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stderr(&o), s.log());
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(j["reference"], pinned.as_str(), "{j}");
    assert_eq!(j["digest"], digest.as_str(), "{j}");
    assert!(j["pinned"].is_null(), "{j}");
    // Pulled (cached) by that digest, listed as the pinned reference.
    let ls = stdout(&s.run(&["image", "ls"]));
    assert!(ls.contains(&digest), "{ls}");

    // The policy names the tag: run time refuses it (digests only), with the way out.
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("cleanroom.yaml");
    let before = POLICY.replace("TAGREF", &tagref);
    std::fs::write(&file, &before).unwrap();
    let o = run_in(
        &s,
        d.path(),
        &["exec", "-n", "--", "/bin/cat", "/etc/os-release"],
    );
    assert_code(&o, "policy_invalid");
    let o = s.run(&[
        "exec",
        "-n",
        "--image",
        &tagref,
        "--",
        "/bin/cat",
        "/etc/os-release",
    ]);
    assert_code(&o, "policy_invalid");
    assert!(stderr(&o).contains("--pin"), "{}", stderr(&o));

    // --pin: exactly the ref line changes (its comment kept); the text output is the pin.
    let o = run_in(&s, d.path(), &["image", "pull", &tagref, "--pin"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), pinned);
    let after = std::fs::read_to_string(&file).unwrap();
    assert_eq!(after, POLICY.replace("TAGREF", &pinned), "{after}");

    // A following exec from that directory uses the pinned image.
    let o = run_in(
        &s,
        d.path(),
        &[
            "exec",
            "-n",
            "--",
            "/bin/sh",
            "-c",
            "cat /etc/os-release; echo $GREETING",
        ],
    );
    assert_eq!(stdout(&o), "ID=first\nhi\n", "{}{}", stderr(&o), s.log());

    // The tag moves; the pinned policy does not follow it (no run-time tag lookups)...
    let second = reg.push_image("team/py", &[image_layer("second")]);
    let digest2 = digest_of(&second);
    assert_eq!(reg.tag("team/py", &digest2, "3.12"), digest2);
    let o = run_in(
        &s,
        d.path(),
        &["exec", "-n", "--", "/bin/cat", "/etc/os-release"],
    );
    assert_eq!(stdout(&o), "ID=first\n", "{}", stderr(&o));
    // ...until it is pinned again (`--policy FILE`), which picks up the new digest.
    let o = s.run(&[
        "-o",
        "json",
        "image",
        "pull",
        &tagref,
        "--pin",
        "--policy",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(j["digest"], digest2.as_str(), "{j}");
    assert_eq!(j["pinned"], file.to_str().unwrap(), "{j}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        POLICY.replace("TAGREF", &format!("{tagref}@{digest2}"))
    );
    let o = run_in(
        &s,
        d.path(),
        &["exec", "-n", "--", "/bin/cat", "/etc/os-release"],
    );
    assert_eq!(stdout(&o), "ID=second\n", "{}", stderr(&o));

    // No policy file yet: --pin creates a minimal one.
    let e = tempfile::tempdir().unwrap();
    let o = run_in(&s, e.path(), &["image", "pull", &pinned, "--pin"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(e.path().join("cleanroom.yaml")).unwrap(),
        format!(
            "version: 1\nsandbox:\n  image:\n    ref: {}/team/py@{digest}\n",
            reg.host()
        )
    );
}

#[test]
fn unknown_tags_and_unpinnable_names_are_refused_with_stable_codes() {
    let reg = Registry::start();
    let r = reg.push_image("team/py", &[image_layer("only")]);
    reg.tag("team/py", &digest_of(&r), "3.12");
    let s = Server::start_with(&["--insecure-registry", &reg.host()]);
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("cleanroom.yaml");
    std::fs::write(&file, "version: 1\n# untouched\n").unwrap();

    // A tag (or repository) the registry does not have: image_not_found, nothing written.
    for missing in ["team/py:3.99", "team/nothing:1"] {
        let tagref = format!("{}/{missing}", reg.host());
        let o = run_in(&s, d.path(), &["image", "pull", &tagref, "--pin"]);
        assert_code(&o, "image_not_found");
        assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "version: 1\n# untouched\n"
    );
    // Names that cannot be pinned without a guess: no registry host, no tag and no digest.
    for bad in ["python:3.12".to_string(), format!("{}/team/py", reg.host())] {
        let o = run_in(&s, d.path(), &["image", "pull", &bad, "--pin"]);
        assert_code(&o, "policy_invalid");
    }
    // A policy --pin cannot edit safely (flow style) is refused and left as it was.
    std::fs::write(&file, "version: 1\nsandbox: {env: {A: b}}\n").unwrap();
    let tagref = format!("{}/team/py:3.12", reg.host());
    let o = run_in(&s, d.path(), &["image", "pull", &tagref, "--pin"]);
    assert_code(&o, "policy_invalid");
    assert!(stderr(&o).contains("by hand"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "version: 1\nsandbox: {env: {A: b}}\n"
    );
    // No registry there at all: registry_unavailable, not a guess.
    let o = s.run(&["image", "pull", "127.0.0.1:9/team/py:1"]);
    assert_code(&o, "registry_unavailable");
}
