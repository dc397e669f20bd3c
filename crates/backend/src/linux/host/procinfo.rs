//! Identify host processes robustly across pid reuse.

use std::io::Read;

/// State (field 3 of `/proc/<pid>/stat`: `R`, `S`, `Z`, …) and start time (field 22, in
/// clock ticks since boot), or `None` when the process does not exist.
///
/// One `read` into a stack buffer: `read_to_string` probes with 32 bytes and grows, five
/// reads per call, and a pool claim asks this on its way to the command.
pub fn state_and_start(pid: i32) -> Option<(char, u64)> {
    let mut f = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?;
    // The line is at most ~700 bytes (a 64-byte command name, 52 numeric fields).
    let mut buf = [0u8; 2048];
    let n = f.read(&mut buf).ok()?;
    let stat = std::str::from_utf8(&buf[..n]).ok()?;
    // The command name may contain spaces and parentheses: parse after the last ')'.
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    // `rest` is now at field 4; field 22 is 18 further.
    let start = rest.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// Start time (field 22 of `/proc/<pid>/stat`, in clock ticks since boot), or `None`
/// when the process does not exist.
pub fn start_time(pid: i32) -> Option<u64> {
    state_and_start(pid).map(|(_, start)| start)
}

/// True while `pid` still names the process that started at `start`.
pub fn is_same_process(pid: i32, start: u64) -> bool {
    pid > 0 && start_time(pid) == Some(start)
}
