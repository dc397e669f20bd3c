//! A sandbox's effective resource limits: server defaults, overridden by the policy's
//! `sandbox.resources`, overridden by the non-zero fields of `CreateSandboxRequest.limits`.
//!
//! Every value is checked against one table of bounds ([`cleanroom_policy::RESOURCE_BOUNDS`],
//! also used when a policy is compiled) before anything is provisioned, so a limit no kernel
//! interface can take (`--memory-mb 99999999999`, `--pids 1099511627776`) is
//! `invalid_argument` naming the field instead of an `internal` error from a cgroup write.

use crate::model::error::EngineError;
use cleanroom_backend::Limits;
use cleanroom_policy::{resource_bounds, CompiledPolicy};

/// What a `CreateSandboxRequest` asks for, as plain numbers (0: not requested). The API
/// layer fills this from the wire message; only the engine turns it into the backend's
/// [`Limits`] (after bounds checks and the policy's and server's defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestedLimits {
    pub memory_bytes: u64,
    pub pids: u64,
    pub cpu_millis: u64,
    pub disk_bytes: u64,
    pub output_bytes: u64,
}

impl From<RequestedLimits> for Limits {
    fn from(r: RequestedLimits) -> Limits {
        Limits {
            memory_bytes: r.memory_bytes,
            pids: r.pids,
            cpu_millis: r.cpu_millis,
            disk_bytes: r.disk_bytes,
            output_bytes: r.output_bytes,
        }
    }
}

/// Check one requested field; `mib` fields are bytes on the wire and MiB in the table.
fn check(field: &str, policy_name: &str, value: u64, mib: bool) -> Result<(), EngineError> {
    if value == 0 {
        return Ok(()); // not requested: the policy or the server default applies
    }
    let Some((lo, hi)) = resource_bounds(policy_name) else {
        return Err(EngineError::internal(format!(
            "no bounds for {policy_name}"
        )));
    };
    let (lo, hi, unit) = if mib {
        (lo << 20, hi << 20, " bytes")
    } else {
        (lo, hi, "")
    };
    if value < lo || value > hi {
        return Err(EngineError::invalid(format!(
            "limits.{field} = {value}{unit} is outside the accepted range {lo}..={hi}"
        ))
        .with("field", format!("limits.{field}")));
    }
    Ok(())
}

/// Validate the request's limits (non-zero fields only: zero means "not requested").
pub fn validate_request(req: &Limits) -> Result<(), EngineError> {
    check("memory_bytes", "memory_mb", req.memory_bytes, true)?;
    check("pids", "pids", req.pids, false)?;
    check("cpu_millis", "cpu_millis", req.cpu_millis, false)?;
    check("disk_bytes", "disk_mb", req.disk_bytes, true)?;
    check("output_bytes", "output_mb", req.output_bytes, true)?;
    Ok(())
}

/// The limits a sandbox gets. The policy's values were bounds-checked when it was
/// compiled (`policy_invalid` otherwise), the request's are checked here.
pub fn effective(policy: &CompiledPolicy, req: Limits) -> Result<Limits, EngineError> {
    validate_request(&req)?;
    let d = Limits::default();
    let r = &policy.resources;
    let pick =
        |req: u64, pol: Option<u64>, def: u64| if req > 0 { req } else { pol.unwrap_or(def) };
    let mib = |m: Option<u64>| m.map(|m| m.saturating_mul(1 << 20));
    let disk_bytes = pick(req.disk_bytes, mib(r.disk_mb), d.disk_bytes);
    Ok(Limits {
        memory_bytes: pick(req.memory_bytes, mib(r.memory_mb), d.memory_bytes),
        pids: pick(req.pids, r.pids, d.pids),
        cpu_millis: pick(req.cpu_millis, r.cpu_millis, d.cpu_millis),
        disk_bytes,
        output_bytes: pick(
            req.output_bytes,
            mib(r.output_mb),
            default_output_bytes(disk_bytes),
        ),
    })
}

/// Retained output of a sandbox that asks for no particular amount: as much as it may
/// write to its disk, at most the server's default (1 GiB) — a 64 MiB sandbox keeps at
/// most 64 MiB of output on the host (docs/budgets.md). An explicit `output_mb` (policy
/// or request) stands as given, within the bounds table.
pub fn default_output_bytes(disk_bytes: u64) -> u64 {
    Limits::default().output_bytes.min(disk_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(f: impl FnOnce(&mut Limits)) -> Limits {
        let mut l = Limits {
            memory_bytes: 0,
            pids: 0,
            cpu_millis: 0,
            disk_bytes: 0,
            output_bytes: 0,
        };
        f(&mut l);
        l
    }

    #[test]
    fn absurd_requests_are_invalid_argument_naming_the_field() {
        let p = CompiledPolicy::builtin();
        let cases: Vec<(Limits, &str)> = vec![
            (
                req(|l| l.memory_bytes = 99_999_999_999 << 20),
                "memory_bytes",
            ),
            (req(|l| l.memory_bytes = u64::MAX), "memory_bytes"),
            (req(|l| l.memory_bytes = 1 << 20), "memory_bytes"),
            (req(|l| l.pids = 1 << 40), "pids"),
            (req(|l| l.pids = 7), "pids"),
            (req(|l| l.cpu_millis = u64::MAX), "cpu_millis"),
            (req(|l| l.cpu_millis = 1), "cpu_millis"),
            (req(|l| l.disk_bytes = u64::MAX), "disk_bytes"),
            (req(|l| l.disk_bytes = 10), "disk_bytes"),
            (req(|l| l.output_bytes = u64::MAX), "output_bytes"),
        ];
        for (l, field) in cases {
            let e = effective(&p, l).unwrap_err();
            assert_eq!(e.code, "invalid_argument", "{l:?}");
            assert!(e.message.contains(field), "{l:?}: {}", e.message);
        }
    }

    #[test]
    fn zero_falls_back_and_sane_values_pass() {
        let p = CompiledPolicy::builtin();
        assert_eq!(effective(&p, req(|_| {})).unwrap(), Limits::default());
        let l = effective(&p, req(|l| l.output_bytes = 4 << 20)).unwrap();
        assert_eq!(l.output_bytes, 4 << 20);
        // Not asked for: the disk quota bounds it.
        let l = effective(&p, req(|l| l.disk_bytes = 64 << 20)).unwrap();
        assert_eq!(l.output_bytes, 64 << 20);
        let l = effective(&p, req(|_| {})).unwrap();
        assert_eq!(l.output_bytes, 1 << 30);
        let l = effective(&p, req(|l| l.pids = 1 << 22)).unwrap();
        assert_eq!(l.pids, 1 << 22);
    }
}
