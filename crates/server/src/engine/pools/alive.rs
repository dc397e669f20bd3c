//! Is a warm sandbox's pid 1 still the process the backend started? A READY sandbox can
//! die while it waits in a pool (OOM kill, a host admin's `kill`, a crash of pid 1): the
//! store still says READY, so the claim checks the process itself before it hands the
//! sandbox over, and a dead one is skipped, terminated and replaced.
//!
//! The check reads `/proc/<pid>/stat` (one open + one read, ~10 µs): the pid must exist, not
//! be a zombie, and have the start time the backend recorded (a recycled pid never
//! passes). No descriptor is held per warm sandbox (5,000 READY sandboxes would need
//! 5,000 pidfds).

use crate::store::SandboxRow;

/// The identity of a sandbox's pid 1 (host pid + start time in clock ticks since boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InitProc {
    /// A host process the backend started.
    Process { pid: i32, start: u64 },
    /// The backend reports no host process for its sandboxes (the in-memory test backend):
    /// there is nothing that could die.
    NoProcess,
}

impl InitProc {
    /// From the stored provision record of a READY sandbox; `None` when the record cannot
    /// be read (such a sandbox is not offered: fail closed).
    pub fn of(row: &SandboxRow) -> Option<InitProc> {
        let p = row.provisioned.get(&row.id).ok()??;
        Some(if p.init_pid <= 0 {
            InitProc::NoProcess
        } else {
            InitProc::Process {
                pid: p.init_pid,
                start: p.init_start_time,
            }
        })
    }

    /// True while pid 1 is the same, running (not zombie/dead) process.
    pub fn alive(&self) -> bool {
        match *self {
            InitProc::NoProcess => true,
            InitProc::Process { pid, start } => {
                stat(pid).is_some_and(|(state, s)| s == start && !matches!(state, 'Z' | 'X' | 'x'))
            }
        }
    }
}

/// State and start time of `/proc/<pid>/stat`.
fn stat(pid: i32) -> Option<(char, u64)> {
    cleanroom_backend::linux::procinfo::state_and_start(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_a_wrong_start_time_is_not() {
        let pid = std::process::id() as i32;
        let (state, start) = stat(pid).expect("own stat");
        assert_ne!(state, 'Z');
        assert!(InitProc::Process { pid, start }.alive());
        assert!(!InitProc::Process {
            pid,
            start: start + 1
        }
        .alive());
        assert_eq!(
            start,
            cleanroom_backend::linux::procinfo::start_time(pid).unwrap()
        );
    }

    #[test]
    fn exited_and_zombie_children_are_dead() {
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id() as i32;
        let start = cleanroom_backend::linux::procinfo::start_time(pid).expect("start");
        // Exited, not yet reaped: a zombie.
        let zombie = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            stat(pid).is_some_and(|(s, _)| s == 'Z')
        });
        assert!(zombie, "child never became a zombie");
        assert!(!InitProc::Process { pid, start }.alive());
        child.wait().expect("reap");
        assert!(!InitProc::Process { pid, start }.alive());
        assert!(InitProc::NoProcess.alive());
    }

    #[test]
    fn unreadable_provision_records_are_not_offered() {
        let row = SandboxRow {
            id: "sbx_x".into(),
            status: crate::model::status::SandboxStatus::Provisioning,
            backend: String::new(),
            policy_hash: String::new(),
            policy: crate::store::StoredPolicy::decode(""),
            created_at: 0,
            updated_at: 0,
            last_execution_id: String::new(),
            active_execution_id: String::new(),
            message: String::new(),
            provisioned: crate::store::StoredProvision::decode("{not json"),
            image_ref: String::new(),
            image_digest: String::new(),
            owner: Default::default(),
            labels: Default::default(),
        };
        assert_eq!(InitProc::of(&row), None);
    }
}
