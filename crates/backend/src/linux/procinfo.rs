//! Identify host processes robustly across pid reuse.

/// Start time (field 22 of `/proc/<pid>/stat`, in clock ticks since boot), or `None`
/// when the process does not exist.
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: parse after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    // rest starts at field 3 (state); field 22 is index 19 here.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// True while `pid` still names the process that started at `start`.
pub fn is_same_process(pid: i32, start: u64) -> bool {
    pid > 0 && start_time(pid) == Some(start)
}
