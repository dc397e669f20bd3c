//! Status numbers as the store keeps them (`i32`), derived from the generated `cleanroom.v1`
//! enums (seed 000): the proto is the one definition, never a hand-copied number.

use buffa::Enumeration;
use cleanroom_proto::cleanroom::v1::{ExecutionStatus as E, SandboxStatus as S};

pub mod sandbox {
    use super::{Enumeration, S};

    pub const PROVISIONING: i32 = S::SANDBOX_STATUS_PROVISIONING as i32;
    pub const READY: i32 = S::SANDBOX_STATUS_READY as i32;
    pub const STOPPING: i32 = S::SANDBOX_STATUS_STOPPING as i32;
    pub const STOPPED: i32 = S::SANDBOX_STATUS_STOPPED as i32;
    pub const FAILED: i32 = S::SANDBOX_STATUS_FAILED as i32;
    pub const PAUSED: i32 = S::SANDBOX_STATUS_PAUSED as i32;
    pub const CHECKPOINTING: i32 = S::SANDBOX_STATUS_CHECKPOINTING as i32;
    pub const CHECKPOINTED: i32 = S::SANDBOX_STATUS_CHECKPOINTED as i32;

    /// Terminal states never change again.
    pub fn is_terminal(s: i32) -> bool {
        s == STOPPED || s == FAILED
    }

    /// Short name (`READY`) from the proto enum's name; `UNSPECIFIED` for unknown numbers.
    pub fn name(s: i32) -> &'static str {
        let known = S::from_i32(s).unwrap_or(S::SANDBOX_STATUS_UNSPECIFIED);
        known.proto_name().trim_start_matches("SANDBOX_STATUS_")
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
    use super::*;

    #[test]
    fn numbers_and_names_follow_the_proto() {
        assert_eq!(sandbox::PROVISIONING, 1);
        assert_eq!(sandbox::FAILED, 5);
        assert_eq!(execution::TIMED_OUT, 6);
        assert_eq!(sandbox::name(sandbox::READY), "READY");
        assert_eq!(sandbox::name(sandbox::STOPPING), "STOPPING");
        assert_eq!(sandbox::name(99), "UNSPECIFIED");
        assert!(sandbox::is_terminal(sandbox::STOPPED));
        assert!(!sandbox::is_terminal(sandbox::READY));
    }
}
