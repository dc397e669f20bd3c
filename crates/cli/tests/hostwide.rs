//! What several servers on one host must never share or leave behind: host id ranges of
//! live sandboxes, and the runtime dirs and cgroups of a server that was SIGKILLed.

mod common;
use common::*;
use std::time::Duration;

/// The host uid that a sandbox's root maps to (second field of its uid_map).
fn host_root_uid(s: &Server, id: &str) -> String {
    let o = s.sh_in(id, "cat /proc/self/uid_map");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    out.split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no uid map: {out}"))
        .to_string()
}

#[test]
fn two_servers_never_give_live_sandboxes_the_same_host_ids() {
    let a = Server::start();
    let b = Server::start();
    let ids_a: Vec<String> = (0..2).map(|_| a.create()).collect();
    let ids_b: Vec<String> = (0..2).map(|_| b.create()).collect();
    let mut uids: Vec<String> = ids_a
        .iter()
        .map(|id| host_root_uid(&a, id))
        .chain(ids_b.iter().map(|id| host_root_uid(&b, id)))
        .collect();
    let n = uids.len();
    uids.sort();
    uids.dedup();
    assert_eq!(
        uids.len(),
        n,
        "two live sandboxes share a host id range: {uids:?}"
    );
}

fn runtime_dirs_of(sandbox_id: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/run/cleanroom")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join(sandbox_id))
        .filter(|p| p.exists())
        .collect()
}

#[test]
fn the_next_server_sweeps_what_a_killed_server_left_even_with_another_state_dir() {
    let mut a = Server::start();
    let id = a.create();
    let dirs = runtime_dirs_of(&id);
    assert_eq!(dirs.len(), 1, "one runtime dir for the live sandbox");
    let instance_dir = dirs[0].parent().unwrap().to_path_buf();
    assert!(!cgroups_named(&id).is_empty(), "the sandbox has cgroups");
    a.kill9();
    // The sandbox dies with its server (parent-death signals)...
    assert!(
        eventually(Duration::from_secs(10), || processes_mentioning(&id)
            .is_empty()),
        "sandbox outlived its server"
    );
    // ...but its directories stay until some server sweeps them.
    let b = Server::start();
    assert!(
        eventually(Duration::from_secs(30), || !instance_dir.exists()),
        "runtime dir of the dead server left behind: {}\n{}",
        instance_dir.display(),
        b.log()
    );
    assert!(
        eventually(Duration::from_secs(30), || cgroups_named(&id).is_empty()),
        "cgroups of the dead server left behind: {:?}",
        cgroups_named(&id)
    );
    // The live server is untouched by its own sweep.
    let o = b.sh("echo alive");
    assert_eq!(stdout(&o), "alive\n", "{}", stderr(&o));
}

#[test]
fn a_live_servers_directories_are_never_swept() {
    let a = Server::start();
    let id = a.create();
    let dirs = runtime_dirs_of(&id);
    assert_eq!(dirs.len(), 1);
    // Another server starts (and sweeps what it may) while the first one is alive.
    let b = Server::start();
    let _ = b.create();
    assert!(dirs[0].exists(), "a live server's runtime dir was swept");
    assert!(
        !cgroups_named(&id).is_empty(),
        "a live server's cgroups were swept"
    );
    let o = a.sh_in(&id, "echo still-here");
    assert_eq!(stdout(&o), "still-here\n", "{}", stderr(&o));
}
