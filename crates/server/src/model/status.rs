//! Statuses as the engine and the store know them, derived from the generated
//! `cleanroom.v1` enums (seed 000): the proto is the one definition of the numbers, never
//! a hand-copied one.
//!
//! A sandbox's status is a typed [`SandboxStatus`] with one state machine
//! ([`SandboxStatus::can_become`]); the store's one status writer refuses every transition
//! it does not allow (`sandbox_not_ready`, naming both statuses). Executions keep their numbers.

use buffa::Enumeration;
use cleanroom_proto::cleanroom::v1::{ExecutionStatus as E, SandboxStatus as S};

/// A sandbox's lifecycle state. Deliberately not `Display`: SQL text takes
/// [`SandboxStatus::number`], messages [`SandboxStatus::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum SandboxStatus {
    Provisioning = S::SANDBOX_STATUS_PROVISIONING as i32,
    Ready = S::SANDBOX_STATUS_READY as i32,
    Stopping = S::SANDBOX_STATUS_STOPPING as i32,
    Stopped = S::SANDBOX_STATUS_STOPPED as i32,
    Failed = S::SANDBOX_STATUS_FAILED as i32,
    Paused = S::SANDBOX_STATUS_PAUSED as i32,
    Checkpointing = S::SANDBOX_STATUS_CHECKPOINTING as i32,
    Checkpointed = S::SANDBOX_STATUS_CHECKPOINTED as i32,
}

impl SandboxStatus {
    /// Every status.
    pub const ALL: [SandboxStatus; 8] = [
        Self::Provisioning,
        Self::Ready,
        Self::Stopping,
        Self::Stopped,
        Self::Failed,
        Self::Paused,
        Self::Checkpointing,
        Self::Checkpointed,
    ];

    /// The proto enum number (what the store and the API carry).
    pub const fn number(self) -> i32 {
        self as i32
    }

    /// The status with proto number `n` (`None`: unspecified or unknown).
    pub fn from_number(n: i32) -> Option<SandboxStatus> {
        Self::ALL.into_iter().find(|s| s.number() == n)
    }

    /// Short name (`READY`) from the proto enum's name.
    pub fn name(self) -> &'static str {
        let known = S::from_i32(self.number()).unwrap_or(S::SANDBOX_STATUS_UNSPECIFIED);
        known.proto_name().trim_start_matches("SANDBOX_STATUS_")
    }

    /// Terminal states never change again.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Stopped | Self::Failed)
    }

    /// The state machine: whether a sandbox in `self` may move to `to`.
    ///
    /// * nothing leaves a terminal state (STOPPED, FAILED), and nothing moves to its own
    ///   state (a write that changes nothing is a caller's mistake);
    /// * every live state may fail, begin stopping, or stop;
    /// * PROVISIONING becomes READY; READY and PAUSED swap (pause, resume); READY
    ///   checkpoints, and a checkpoint ends READY (or CHECKPOINTED, which resumes READY);
    /// * nothing returns to PROVISIONING, and STOPPING only ends.
    pub const fn can_become(self, to: SandboxStatus) -> bool {
        use SandboxStatus::*;
        if self.is_terminal() || self as i32 == to as i32 {
            return false;
        }
        match (self, to) {
            (Stopping, Stopped | Failed) => true,
            (Stopping, _) => false,
            (_, Failed | Stopping | Stopped) => true,
            (Provisioning, Ready) => true,
            (Ready, Paused | Checkpointing) => true,
            (Paused, Ready) => true,
            (Checkpointing, Ready | Checkpointed) => true,
            (Checkpointed, Ready) => true,
            _ => false,
        }
    }
}

impl From<SandboxStatus> for i32 {
    fn from(s: SandboxStatus) -> i32 {
        s.number()
    }
}

/// The statuses by their short names, for code that reads best as `ss::READY`.
pub mod sandbox {
    use super::SandboxStatus;

    pub const PROVISIONING: SandboxStatus = SandboxStatus::Provisioning;
    pub const READY: SandboxStatus = SandboxStatus::Ready;
    pub const STOPPING: SandboxStatus = SandboxStatus::Stopping;
    pub const STOPPED: SandboxStatus = SandboxStatus::Stopped;
    pub const FAILED: SandboxStatus = SandboxStatus::Failed;
    pub const PAUSED: SandboxStatus = SandboxStatus::Paused;
    pub const CHECKPOINTING: SandboxStatus = SandboxStatus::Checkpointing;
    pub const CHECKPOINTED: SandboxStatus = SandboxStatus::Checkpointed;

    /// Terminal states never change again.
    pub fn is_terminal(s: SandboxStatus) -> bool {
        s.is_terminal()
    }

    /// Short name (`READY`).
    pub fn name(s: SandboxStatus) -> &'static str {
        s.name()
    }
}

pub mod execution {
    use super::E;

    pub const QUEUED: i32 = E::EXECUTION_STATUS_QUEUED as i32;
    pub const RUNNING: i32 = E::EXECUTION_STATUS_RUNNING as i32;
    pub const SUCCEEDED: i32 = E::EXECUTION_STATUS_SUCCEEDED as i32;
    pub const FAILED: i32 = E::EXECUTION_STATUS_FAILED as i32;
    pub const CANCELED: i32 = E::EXECUTION_STATUS_CANCELED as i32;
    pub const TIMED_OUT: i32 = E::EXECUTION_STATUS_TIMED_OUT as i32;
}

#[cfg(test)]
mod tests {
    use super::SandboxStatus::{self, *};
    use super::*;

    #[test]
    fn numbers_and_names_follow_the_proto() {
        assert_eq!(sandbox::PROVISIONING.number(), 1);
        assert_eq!(sandbox::FAILED.number(), 5);
        assert_eq!(execution::TIMED_OUT, 6);
        assert_eq!(sandbox::name(sandbox::READY), "READY");
        assert_eq!(sandbox::name(sandbox::STOPPING), "STOPPING");
        assert_eq!(SandboxStatus::from_number(99), None);
        assert_eq!(SandboxStatus::from_number(0), None);
        for s in SandboxStatus::ALL {
            assert_eq!(SandboxStatus::from_number(s.number()), Some(s));
            assert_ne!(s.name(), "UNSPECIFIED");
        }
        assert!(sandbox::is_terminal(sandbox::STOPPED));
        assert!(!sandbox::is_terminal(sandbox::READY));
    }

    #[test]
    fn the_transitions_the_engine_makes_are_legal() {
        for (from, to) in [
            (Provisioning, Ready),
            (Provisioning, Failed),
            (Provisioning, Stopping),
            (Ready, Paused),
            (Paused, Ready),
            (Ready, Stopping),
            (Paused, Stopping),
            (Stopping, Stopped),
            (Stopping, Failed),
            (Ready, Failed),
            (Ready, Checkpointing),
            (Checkpointing, Ready),
            (Checkpointed, Ready),
        ] {
            assert!(from.can_become(to), "{from:?} -> {to:?}");
        }
    }

    #[test]
    fn nothing_leaves_a_terminal_state() {
        for from in [Stopped, Failed] {
            for to in SandboxStatus::ALL {
                assert!(!from.can_become(to), "{from:?} -> {to:?}");
            }
        }
    }

    #[test]
    fn no_status_becomes_itself() {
        for s in SandboxStatus::ALL {
            assert!(!s.can_become(s), "{s:?} -> {s:?}");
        }
    }

    #[test]
    fn nothing_returns_to_provisioning() {
        for from in SandboxStatus::ALL {
            assert!(!from.can_become(Provisioning), "{from:?} -> PROVISIONING");
        }
    }

    #[test]
    fn stopping_only_ends() {
        for to in [Ready, Paused, Checkpointing, Checkpointed, Provisioning] {
            assert!(!Stopping.can_become(to), "STOPPING -> {to:?}");
        }
    }

    #[test]
    fn no_state_is_skipped() {
        // PROVISIONING is never paused or checkpointed; a paused sandbox is not
        // checkpointed by status (its files are snapshotted while it stays PAUSED).
        for (from, to) in [
            (Provisioning, Paused),
            (Provisioning, Checkpointing),
            (Provisioning, Checkpointed),
            (Ready, Checkpointed),
            (Paused, Checkpointing),
            (Paused, Checkpointed),
            (Checkpointed, Paused),
        ] {
            assert!(!from.can_become(to), "{from:?} -> {to:?}");
        }
    }
}
