//! Identity and what the server holds privately.
//!
//! * [`auth`]: who is calling — principals from unix peer credentials, bearer tokens and
//!   client certificates;
//! * [`attest`]: what the server vouches for — its attestation signer and key;
//! * [`secrets`]: the secret values only the server holds (injected by the egress
//!   gateways, never shown to a sandbox);
//! * [`private_file`]: how the tokens, secrets and key files are read (owner and mode
//!   checked first).

pub mod attest;
pub mod auth;
pub mod private_file;
pub mod secrets;
