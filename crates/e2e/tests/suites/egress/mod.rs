//! The egress gateway: conformance, the host's own addresses, fronting, TCP, per-principal
//! shares, approvals, learn mode, secrets and their redaction, git mediation, unreachable
//! upstreams.

mod approvals;
mod conformance;
mod git_mediation;
mod host;
mod kernel;
mod learn;
mod passthrough;
mod redaction;
mod secrets;
mod shares;
mod strict;
mod tcp;
mod unreachable;
