//! The egress gateway: a sandbox's only way out.
//!
//! The backend gives each sandbox a network namespace whose single interface is a tun
//! device, with every route pointing into it. The server hands that device's fd to
//! [`Gateway::start`], which runs a userspace TCP/IP stack (`ipstack`) on it. Nothing the
//! sandbox sends reaches a real network stack of the host: each TCP connection and UDP
//! flow surfaces here, is judged against the sandbox's compiled `NetworkPolicy`, and is
//! either proxied by the gateway or dropped with a deny event carrying a stable reason code.
//! On the kernel plane ([`kernel`]) the device is a veth into a gateway namespace instead, and
//! the host kernel's TCP terminates the sandbox's connections; from there on every flow
//! takes the same code.
//!
//! * DNS (UDP or TCP to the gateway address, port 53) is answered here ([`dns`]): allowed
//!   names get synthetic addresses ([`names`]), other names NXDOMAIN.
//! * TCP to a synthetic address is a connection to that name: port checked, TLS SNI / HTTP
//!   Host checked against the name ([`tcp`]), then proxied from the host.
//! * TCP to the gateway's proxy port is an HTTP proxy (`HTTP_PROXY`/`HTTPS_PROXY`) with
//!   CONNECT and absolute-form requests ([`http`]).
//! * Everything else — direct IPs, other UDP, other resolvers, ICMP, IPv6 — is denied.
//!
//! Every one of those paths asks the one judge (`judge.rs`) whether a destination may be
//! reached. The modules form a layered graph with no import cycle (this file only declares
//! and re-exports; `layering_tests` checks the graph).

pub mod addrs;
pub mod approval;
mod body;
mod caps;
mod closing;
mod connect;
mod ctx;
mod cut;
pub mod device;
pub mod dns;
pub mod event;
mod framing;
mod gateway;
#[cfg(test)]
mod gateway_tests;
pub mod http;
pub mod intercept;
mod judge;
#[cfg(test)]
mod judge_tests;
pub mod kernel;
#[cfg(test)]
mod layering_tests;
pub mod limits;
mod link;
mod mediate;
pub mod names;
mod pass;
pub mod redact;
pub mod registry;
mod relay;
pub mod rules;
pub mod secrets;
pub mod share;
pub mod sniff;
#[cfg(test)]
mod stack_budget_tests;
#[cfg(test)]
mod stack_scale_tests;
#[cfg(test)]
mod stack_tests;
mod strict;
pub mod tcp;
pub mod tls;
mod trial;
pub mod upstream;

pub use approval::Approvals;
pub use ctx::Ctx;
pub use event::{EgressEvent, EventSink};
pub use gateway::{Gateway, Mediators};
pub use kernel::KernelSockets;
pub use limits::{MAX_FLOWS, MAX_UDP_FLOWS};
pub use link::{
    GATEWAY_ADDR, GUEST_ADDR, MTU, PROXY_PORT, STACK_BUDGET, TCP_RECV_BUFFER, TCP_SEND_WINDOW,
};
pub use secrets::{Secret, Secrets};
pub use tls::SandboxCa;
pub use upstream::UpstreamConfig;
