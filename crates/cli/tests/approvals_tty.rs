//! The interactive prompt of `cleanroom exec`, driven through a real terminal: the CLI runs
//! in a tmux pane (a real pty), the policy asks, the test types the answer, and the
//! workload's own stdin keeps working around the prompt.

use cleanroom_e2e::*;
use std::process::Command;
use std::time::Duration;

/// A tmux server of our own (its socket in a temp dir, removed with it), killed on drop.
struct Tmux {
    socket: String,
    _dir: tempfile::TempDir,
}

impl Tmux {
    fn start(cmd: &str) -> Tmux {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock").display().to_string();
        let ok = Command::new("tmux")
            .args([
                "-S",
                &socket,
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                "200",
                "-y",
                "50",
                cmd,
            ])
            .status()
            .expect("tmux");
        assert!(ok.success());
        Tmux { socket, _dir: dir }
    }

    fn screen(&self) -> String {
        let o = Command::new("tmux")
            .args([
                "-S",
                &self.socket,
                "capture-pane",
                "-p",
                "-J",
                "-t",
                "t",
                "-S",
                "-200",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn wait_for(&self, text: &str) -> bool {
        eventually(Duration::from_secs(60), || self.screen().contains(text))
    }

    fn type_line(&self, line: &str) {
        let ok = Command::new("tmux")
            .args(["-S", &self.socket, "send-keys", "-t", "t", line, "Enter"])
            .status()
            .unwrap();
        assert!(ok.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-S", &self.socket, "kill-server"])
            .status();
    }
}

fn run_in_tmux(s: &Server, policy: &str, script: &str) -> Tmux {
    let cmd = format!(
        "CLEANROOM_HOST={} {} exec --policy {policy} -- sh -c '{script}'; echo EXIT=$?; sleep 300",
        s.host(),
        BIN
    );
    Tmux::start(&cmd)
}

#[test]
fn the_terminal_prompt_answers_and_stdin_still_reaches_the_workload() {
    let port = hello_upstream();
    let s = Server::start_with(&["--egress-resolve", "api.test=127.0.0.1"]);
    let d = tempfile::tempdir().unwrap();
    let policy = write(
        &d,
        "cleanroom.yaml",
        "version: 1\nsandbox:\n  network:\n    unknown: ask\n    approval_timeout_seconds: 120\n",
    );
    let script = format!(
        "curl -sS -m 100 --noproxy \"*\" http://api.test:{port}/one; echo; \
         read line; echo got:$line; \
         curl -sS -m 100 --noproxy \"*\" http://api.test:{port}/two; echo"
    );
    let t = run_in_tmux(&s, &policy, &script);
    let prompt = format!("allow api.test:{port}? [y/N/always]");
    assert!(t.wait_for(&prompt), "no prompt:\n{}", t.screen());
    t.type_line("always");
    assert!(t.wait_for("hello:/one"), "{}", t.screen());
    // The workload reads its own stdin: the typed line is not taken by a prompt.
    t.type_line("typed-for-the-workload");
    assert!(t.wait_for("got:typed-for-the-workload"), "{}", t.screen());
    // Remembered for the sandbox: the second connection is not asked again.
    assert!(t.wait_for("hello:/two"), "{}", t.screen());
    assert!(t.wait_for("EXIT=0"), "{}", t.screen());
    assert_eq!(
        t.screen().matches("[y/N/always]").count(),
        1,
        "{}",
        t.screen()
    );
}

#[test]
fn the_terminal_prompt_denies_by_default() {
    let port = hello_upstream();
    let s = Server::start_with(&["--egress-resolve", "api.test=127.0.0.1"]);
    let d = tempfile::tempdir().unwrap();
    let policy = write(
        &d,
        "cleanroom.yaml",
        "version: 1\nsandbox:\n  network:\n    unknown: ask\n    approval_timeout_seconds: 120\n",
    );
    let script =
        format!("curl -sS -m 100 --noproxy \"*\" http://api.test:{port}/x && echo REACHED");
    let t = run_in_tmux(&s, &policy, &script);
    assert!(t.wait_for("[y/N/always]"), "no prompt:\n{}", t.screen());
    t.type_line("");
    assert!(t.wait_for("EXIT="), "{}", t.screen());
    let screen = t.screen();
    assert!(
        !screen.contains("REACHED") && !screen.contains("EXIT=0"),
        "{screen}"
    );
    assert!(screen.contains("approval_denied"), "{screen}");
}
