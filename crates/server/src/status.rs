//! Status numbers, identical to the `cleanroom.v1` proto enums (seed 000).

pub mod sandbox {
    pub const PROVISIONING: i32 = 1;
    pub const READY: i32 = 2;
    pub const STOPPING: i32 = 3;
    pub const STOPPED: i32 = 4;
    pub const FAILED: i32 = 5;

    /// Terminal states never change again.
    pub fn is_terminal(s: i32) -> bool {
        s == STOPPED || s == FAILED
    }
    pub fn name(s: i32) -> &'static str {
        match s {
            PROVISIONING => "PROVISIONING",
            READY => "READY",
            STOPPING => "STOPPING",
            STOPPED => "STOPPED",
            FAILED => "FAILED",
            _ => "UNSPECIFIED",
        }
    }
}

pub mod execution {
    pub const QUEUED: i32 = 1;
    pub const RUNNING: i32 = 2;
    pub const SUCCEEDED: i32 = 3;
    pub const FAILED: i32 = 4;
    pub const CANCELED: i32 = 5;
    pub const TIMED_OUT: i32 = 6;
}
