//! `cleanroom console` driven the way a person drives it: in a real terminal (tmux),
//! with keys sent and the screen read back. The guest's shell answers, the window size
//! follows, Ctrl-C interrupts the foreground job only, exit codes come back, a second
//! client sees the same screen, a full-screen program renders, Ctrl-] detaches and
//! `--attach` resumes, and the local terminal is restored even when the server is killed.

use cleanroom_e2e::*;
use std::process::Command;
use std::time::Duration;

/// A private tmux server (its own socket name), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new(tag: &str) -> Tmux {
        Tmux {
            socket: format!("cleanroom-test-{tag}-{}", std::process::id()),
        }
    }

    fn cmd(&self, args: &[&str]) -> String {
        let o = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux (scripts/deps.sh installs it)");
        assert!(o.status.success(), "tmux {args:?}: {}", stderr(&o));
        stdout(&o)
    }

    /// A window `name` running a host shell with the CLI pointed at `s`.
    fn shell(&self, name: &str, s: &Server, cols: u16, rows: u16) {
        let dir = std::path::Path::new(BIN)
            .parent()
            .unwrap()
            .display()
            .to_string();
        let script = format!(
            "exec env -i PATH={dir}:/usr/bin:/bin HOME=/tmp TERM=xterm CLEANROOM_HOST={} PS1='host$ ' /bin/sh",
            s.host()
        );
        let (c, r) = (cols.to_string(), rows.to_string());
        self.cmd(&["new-session", "-d", "-s", name, "-x", &c, "-y", &r, &script]);
    }

    fn keys(&self, name: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", name];
        args.extend_from_slice(keys);
        self.cmd(&args);
    }

    fn line(&self, name: &str, text: &str) {
        self.keys(name, &["-l", text]);
        self.keys(name, &["Enter"]);
    }

    fn screen(&self, name: &str) -> String {
        // -J: wrapped lines joined, as they were written.
        self.cmd(&["capture-pane", "-p", "-J", "-t", name])
    }

    /// Wait (bounded) until the screen satisfies `f`; returns that screen.
    fn wait(&self, name: &str, what: &str, f: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        let ok = eventually(Duration::from_secs(40), || {
            last = self.screen(name);
            f(&last)
        });
        assert!(ok, "screen {name} never showed {what}:\n{last}");
        last
    }

    /// Wait for a line that is `line` (or `# line`: output after a prompt when the
    /// keys were typed ahead).
    fn wait_line(&self, name: &str, line: &str) -> String {
        let after_prompt = format!("# {line}");
        self.wait(name, line, |s| {
            s.lines()
                .any(|l| l.trim_end() == line || l.trim_end() == after_prompt)
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
        // SAFETY: getuid(2) cannot fail.
        let uid = unsafe { libc::getuid() };
        let _ = std::fs::remove_file(format!("/tmp/tmux-{uid}/{}", self.socket));
    }
}

/// The execution id the guest shell reports about itself.
fn guest_execution_id(t: &Tmux, name: &str) -> String {
    t.line(name, "echo ID=$CLEANROOM_EXECUTION_ID");
    let screen = t.wait(name, "the execution id", |s| {
        s.lines().any(|l| l.starts_with("ID=exe_"))
    });
    let line = screen.lines().find(|l| l.starts_with("ID=exe_")).unwrap();
    line.trim_end().trim_start_matches("ID=").to_string()
}

#[test]
fn console_drives_a_real_terminal() {
    let s = Server::start();
    let t = Tmux::new("drive");
    t.shell("main", &s, 100, 30);
    t.wait("main", "the host prompt", |s| s.contains("host$"));
    t.line(
        "main",
        "cleanroom console -- sh; echo EXIT=$?; stty -a | grep -o -- '-*icanon'",
    );
    t.wait("main", "the guest prompt", |s| {
        s.lines().any(|l| l.trim_end() == "#")
    });

    t.line("main", "echo $((6*7))");
    t.wait_line("main", "42");

    // The window size follows the real terminal.
    t.line("main", "stty size");
    t.wait_line("main", "30 100");
    t.cmd(&["resize-window", "-t", "main", "-x", "120", "-y", "40"]);
    t.line("main", "clear; stty size");
    t.wait_line("main", "40 120");

    // Ctrl-C interrupts the foreground job, not the session.
    t.line("main", "sleep 100; echo slept-$((1+1))");
    std::thread::sleep(Duration::from_millis(500));
    t.keys("main", &["C-c"]);
    t.line("main", "echo alive-$((1+1))");
    let screen = t.wait_line("main", "alive-2");
    assert!(!screen.contains("slept-2"), "{screen}");
    // Ctrl-Z stops it (job control in the guest's own session); it can be killed.
    t.line("main", "sleep 100");
    std::thread::sleep(Duration::from_millis(500));
    t.keys("main", &["C-z"]);
    t.wait("main", "a stopped job", |s| s.contains("Stopped"));
    t.line("main", "kill -9 %1; echo killed-$((2+2))");
    t.wait_line("main", "killed-4");

    // A second client sees the same screen, live.
    let exe = guest_execution_id(&t, "main");
    t.shell("view", &s, 120, 40);
    t.wait("view", "the host prompt", |s| s.contains("host$"));
    t.line(
        "view",
        &format!("cleanroom console --attach {exe} --viewer; echo VEXIT=$?"),
    );
    t.wait_line("view", "alive-2");
    t.line("main", "echo both-$((3+3))");
    t.wait_line("main", "both-6");
    t.wait_line("view", "both-6");

    // A full-screen program renders (busybox vi: scripts/deps.sh installs busybox-static).
    t.line("main", "clear; busybox vi /tmp/note.txt");
    let screen = t.wait("main", "vi's empty-line markers", |s| {
        s.lines().filter(|l| l.starts_with('~')).count() > 10
    });
    assert!(screen.contains("/tmp/note.txt"), "{screen}");
    t.keys("main", &["-l", "ihello-vi"]);
    t.keys("main", &["Escape"]);
    // Apart from the Escape: together they would read as one escape sequence (Alt-:).
    std::thread::sleep(Duration::from_millis(500));
    t.line("main", ":wq");
    // vi flushes typeahead when it restores the terminal: wait until it is gone.
    t.wait("main", "vi gone", |s| {
        !s.lines().any(|l| l.starts_with('~'))
    });
    std::thread::sleep(Duration::from_millis(300));
    t.line("main", "clear; cat /tmp/note.txt; echo cat-$((4+4))");
    let screen = t.wait_line("main", "cat-8");
    assert!(
        screen.lines().any(|l| l.trim_end() == "hello-vi"),
        "{screen}"
    );

    // The guest's exit code comes back; the terminal is restored (icanon, not -icanon).
    t.line("main", "exit 7");
    let screen = t.wait_line("main", "EXIT=7");
    t.wait_line("main", "icanon");
    assert!(!screen.contains("-icanon"), "{screen}");
    t.wait_line("view", "VEXIT=7");
}

#[test]
fn console_detach_reattach_and_a_killed_server() {
    let mut s = Server::start();
    let t = Tmux::new("detach");
    t.shell("main", &s, 100, 30);
    t.wait("main", "the host prompt", |s| s.contains("host$"));
    t.line("main", "cleanroom console -- sh; echo EXIT=$?");
    t.wait("main", "the guest prompt", |s| {
        s.lines().any(|l| l.trim_end() == "#")
    });
    t.line("main", "echo one-$((0+1))");
    t.wait_line("main", "one-1");
    let exe = guest_execution_id(&t, "main");

    // Ctrl-] detaches: exit 0, the way back is printed, the command keeps running.
    t.keys("main", &["C-]"]);
    let screen = t.wait_line("main", "EXIT=0");
    assert!(
        screen.contains(&format!("cleanroom console --attach {exe}")),
        "{screen}"
    );
    t.line("main", "clear; stty -a | grep -o -- '-*icanon'");
    t.wait_line("main", "icanon");

    // Re-attach: the screen comes back (replayed) and the shell still answers.
    t.line(
        "main",
        &format!("cleanroom console --attach {exe}; echo EXIT2=$?"),
    );
    t.wait_line("main", "one-1");
    t.line("main", "echo two-$((1+1))");
    t.wait_line("main", "two-2");

    // The server dies under the attached client: it notices, says so, restores the
    // terminal and fails with the CLI's error code.
    s.kill9();
    let screen = t.wait_line("main", "EXIT2=125");
    assert!(screen.contains("[stream_ended]"), "{screen}");
    t.line("main", "clear; stty -a | grep -o -- '-*icanon'");
    t.wait_line("main", "icanon");
    // The next server's recovery reclaims the sandbox the killed one left.
    s.spawn();
}
