//! Code that runs in a file helper: a short-lived child pid 1 forks for one files-API
//! request, acting with the sandbox's own identity inside its root ([`open`] says why).
//! It answers the server itself over the control socket and exits.

pub mod archive;
pub mod dirs;
pub mod open;
pub mod ops;
pub mod paths;
pub mod stat;
pub mod upload;
