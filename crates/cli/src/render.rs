//! Human and JSON rendering of API objects.

use cleanroom_client::api::{Execution, ExecutionStatus, Image, Sandbox};
use cleanroom_client::{ApiError, ErrorCode};

/// Short status name from the generated enum's proto name (`SANDBOX_STATUS_READY` -> `READY`).
fn short_name<E: buffa::Enumeration>(v: Option<E>, prefix: &str) -> &'static str {
    match v {
        Some(e) => {
            let name = e.proto_name();
            name.strip_prefix(prefix).unwrap_or(name)
        }
        None => "UNSPECIFIED",
    }
}

pub fn sandbox_status(s: &Sandbox) -> &'static str {
    short_name(s.status.as_known(), "SANDBOX_STATUS_")
}

pub fn execution_status_name(s: i32) -> &'static str {
    short_name(
        <ExecutionStatus as buffa::Enumeration>::from_i32(s),
        "EXECUTION_STATUS_",
    )
}

pub(crate) fn time(
    t: &buffa::MessageField<
        buffa_types::google::protobuf::Timestamp,
        buffa::Inline<buffa_types::google::protobuf::Timestamp>,
    >,
) -> String {
    match t.as_option() {
        Some(ts) => unix_time(ts.seconds),
        None => "-".into(),
    }
}

/// Seconds since the Unix epoch as RFC 3339 UTC (`2026-11-27T22:08:30Z`): how human text
/// output shows every time (docs/api.md "Output conventions"), without a date crate.
pub(crate) fn unix_time(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub fn sandbox_table(list: &[Sandbox]) -> String {
    let mut out = format!(
        "{:<36}  {:<12}  {:<8}  {:<20}  {:<19}  {}\n",
        "SANDBOX ID", "STATUS", "BACKEND", "CREATED", "POLICY HASH", "OWNER"
    );
    for s in list {
        let hash: String = s.policy_hash.chars().take(19).collect();
        out += &format!(
            "{:<36}  {:<12}  {:<8}  {:<20}  {:<19}  {}\n",
            s.sandbox_id,
            sandbox_status(s),
            s.backend,
            time(&s.created_at),
            hash,
            or_dash(&s.owner)
        );
    }
    out
}

pub fn sandbox_detail(s: &Sandbox) -> String {
    let mut out = String::new();
    out += &format!("sandbox_id:          {}\n", s.sandbox_id);
    out += &format!("status:              {}\n", sandbox_status(s));
    out += &format!("owner:               {}\n", or_dash(&s.owner));
    out += &format!("backend:             {}\n", s.backend);
    out += &format!("policy_hash:         {}\n", s.policy_hash);
    out += &format!("created_at:          {}\n", time(&s.created_at));
    out += &format!("updated_at:          {}\n", time(&s.updated_at));
    out += &format!("last_execution_id:   {}\n", or_dash(&s.last_execution_id));
    out += &format!("active_execution_id: {}\n", or_dash(&s.active_execution_id));
    if !s.message.is_empty() {
        out += &format!("message:             {}\n", s.message);
    }
    if !s.image_ref.is_empty() {
        out += &format!("image_ref:           {}\n", s.image_ref);
        out += &format!("image_digest:        {}\n", s.image_digest);
    }
    // Derived state: the policy (and its hash) never change; these were answered for the
    // whole sandbox with `sandbox approve --remember sandbox` or `always` at a prompt.
    if s.egress_asks {
        out += "egress_asks:         true\n";
    }
    for d in &s.egress_approved {
        out += &format!("egress_approved:     {d}\n");
    }
    for d in &s.egress_refused {
        out += &format!("egress_refused:      {d}\n");
    }
    let mut labels: Vec<_> = s.labels.iter().collect();
    labels.sort();
    for (k, v) in labels {
        out += &format!("label:               {k}={v}\n");
    }
    if !s.pool_id.is_empty() {
        out += &format!("pool_id:             {}\n", s.pool_id);
    }
    if !s.agent_public_key.is_empty() {
        out += &format!("agent_public_key:    {}\n", s.agent_public_key);
        for (i, k) in s.delegation_chain.iter().enumerate() {
            out += &format!("delegation_chain.{i}:  {k}\n");
        }
    }
    if let Some(info) = s.backend_info.as_option() {
        let mut keys: Vec<_> = info.fields.keys().collect();
        keys.sort();
        for k in keys {
            let v = serde_json::to_string(&info.fields[k]).unwrap_or_default();
            out += &format!("backend.{k}: {}\n", v.trim_matches('"'));
        }
    }
    out += &crate::network::detail(s);
    out += &crate::inbound::detail(s);
    out += &crate::lifetime::detail(s);
    out
}

pub fn image_table(list: &[Image]) -> String {
    let mut out = format!(
        "{:<71}  {:>10}  {:<20}  {}\n",
        "DIGEST", "SIZE", "PULLED", "REFERENCE"
    );
    for i in list {
        out += &format!(
            "{:<71}  {:>10}  {:<20}  {}\n",
            i.digest,
            i.size,
            time(&i.pulled_at),
            i.reference
        );
    }
    out
}

pub fn execution_detail(e: &Execution) -> String {
    let mut out = String::new();
    out += &format!("execution_id: {}\n", e.execution_id);
    out += &format!("sandbox_id:   {}\n", e.sandbox_id);
    out += &format!(
        "status:       {}\n",
        execution_status_name(e.status.to_i32())
    );
    out += &format!("exit_code:    {}\n", e.exit_code);
    out += &format!(
        "command:      {}\n",
        serde_json::to_string(&e.command).unwrap_or_default()
    );
    out += &format!("cwd:          {}\n", e.cwd);
    out += &format!("created_at:   {}\n", time(&e.created_at));
    out += &format!("started_at:   {}\n", time(&e.started_at));
    out += &format!("finished_at:  {}\n", time(&e.finished_at));
    out += &format!("trace_id:     {}\n", or_dash(&e.trace_id));
    if !e.message.is_empty() {
        out += &format!("message:      {}\n", e.message);
    }
    out
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}

/// Exit code for failures of cleanroom itself (before or around the guest command).
pub const EXIT_CLEANROOM_ERROR: i32 = 125;

/// A CLI-side failure as an [`ApiError`], so it takes the same paths as the server's.
pub fn local(code: ErrorCode, message: impl Into<String>) -> ApiError {
    ApiError {
        code: code.as_str().into(),
        message: message.into(),
        connect_code: String::new(), // no RPC was involved
        details: vec![],
    }
}

/// Print a CLI-side failure and return [`EXIT_CLEANROOM_ERROR`].
pub fn fail(code: ErrorCode, message: impl std::fmt::Display) -> i32 {
    report(code.as_str(), &message.to_string(), None);
    EXIT_CLEANROOM_ERROR
}

/// The one place an error line is printed: `cleanroom: error [code]: message`, then the
/// follow-up command, if any. `code` is a stable code from the server, the policy
/// compiler, or the CLI's own (client-side [`ErrorCode`]s).
pub fn report(code: &str, message: &str, hint: Option<String>) {
    eprintln!("cleanroom: error [{code}]: {message}");
    if let Some(h) = hint {
        eprintln!("  inspect: {h}");
    }
}

/// Print how an execution ended when the guest did not end it and no code says why
/// (e.g. `CANCELED`, `TIMED_OUT`), with the follow-up command.
pub fn ended(status: &str, message: &str, hint: Option<String>) {
    eprintln!("cleanroom: execution {status}: {message}");
    if let Some(h) = hint {
        eprintln!("  inspect: {h}");
    }
}

/// Print a warning with its stable code.
pub fn warning(code: &str, message: &str) {
    eprintln!("cleanroom: warning [{code}]: {message}");
}

/// Print an API error with its stable code and a follow-up command.
pub fn error(e: &ApiError, hint: Option<String>) {
    // An id that names no sandbox (of the caller's) gets the list, never `sandbox inspect`
    // of that id again.
    let hint = hint.filter(|_| !e.is(ErrorCode::SandboxNotFound));
    let hint = hint.or_else(|| {
        e.details
            .iter()
            .find(|(k, _)| k == "execution_id")
            .map(|(_, v)| format!("cleanroom execution inspect {v}"))
            .or_else(|| {
                e.details
                    .iter()
                    .find(|(k, _)| k == "sandbox_id")
                    .filter(|_| !e.is(ErrorCode::SandboxNotFound))
                    .map(|(_, v)| format!("cleanroom sandbox inspect {v}"))
            })
    });
    let hint = hint.or_else(|| match e.error_code()? {
        ErrorCode::SandboxNotFound => Some("cleanroom sandbox ls --all".to_string()),
        ErrorCode::ServerUnreachable => Some("cleanroom serve   # start the server".to_string()),
        ErrorCode::Unauthenticated => Some(
            "set CLEANROOM_TOKEN (or --token) to your plaintext token. The server's --tokens-file holds only `sha256:` hashes of tokens: whoever created that file has the tokens (ask them for yours)"
                .to_string(),
        ),
        _ => None,
    });
    report(&e.code, &e.message, hint);
}

/// One event as a compact JSON line (the proto3 JSON mapping, so field names match the API).
///
/// Attribute numbers travel as `google.protobuf.Value` doubles; like the proto3 JSON
/// mapping's reference encoders, integral ones print as integers (`"port":443`, not
/// `443.0`).
pub fn event_json(ev: &cleanroom_client::api::SandboxEvent) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, IntegralFloats);
    match serde::Serialize::serialize(ev, &mut ser) {
        Ok(()) => String::from_utf8_lossy(&out).into_owned(),
        Err(e) => format!("{{\"error\":\"{e}\"}}"),
    }
}

/// serde_json's compact format, except that a double holding an integer that is exact in
/// an f64 (|x| < 2^53) is written without a fraction. Non-finite values never get here
/// (serde_json writes them as `null`).
struct IntegralFloats;

impl serde_json::ser::Formatter for IntegralFloats {
    fn write_f64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: f64) -> std::io::Result<()> {
        const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
        if v.fract() == 0.0 && v.abs() < EXACT {
            write!(w, "{}", v as i64)
        } else {
            serde_json::ser::CompactFormatter.write_f64(w, v)
        }
    }
}

#[cfg(test)]
mod event_json_tests {
    use super::event_json;
    use buffa_types::google::protobuf::{Struct, Value};
    use cleanroom_client::api::SandboxEvent;

    fn event(attrs: Vec<(&str, Value)>) -> SandboxEvent {
        SandboxEvent {
            sequence: 7,
            r#type: "egress.deny".into(),
            attributes: attrs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<Struct>()
                .into(),
            ..Default::default()
        }
    }

    #[test]
    fn integral_attribute_numbers_print_as_integers() {
        let line = event_json(&event(vec![
            ("port", Value::from(443.0)),
            ("suppressed", Value::from(12.0)),
            ("zero", Value::from(0.0)),
            ("negative", Value::from(-3.0)),
            ("host", Value::from("api.test".to_string())),
        ]));
        for want in [
            "\"port\":443",
            "\"suppressed\":12",
            "\"zero\":0",
            "\"negative\":-3",
            "\"host\":\"api.test\"",
        ] {
            assert!(line.contains(want), "{want} not in {line}");
        }
        assert!(!line.contains("443.0"), "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
        assert_eq!(v["attributes"]["port"].as_u64(), Some(443));
    }

    #[test]
    fn fractional_and_huge_numbers_keep_their_value() {
        let line = event_json(&event(vec![
            ("ratio", Value::from(1.5)),
            ("huge", Value::from(1e300)),
        ]));
        let v: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
        assert_eq!(v["attributes"]["ratio"].as_f64(), Some(1.5));
        assert_eq!(v["attributes"]["huge"].as_f64(), Some(1e300));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_errors_carry_their_code() {
        let e = local(ErrorCode::StreamEnded, "m");
        assert_eq!((e.code.as_str(), e.message.as_str()), ("stream_ended", "m"));
        assert!(e.details.is_empty());
    }
}

/// `rm` of several objects: run `op` for each id in order, printing the id when it succeeds
/// and the error when it fails (the others still run). [`EXIT_CLEANROOM_ERROR`] when any
/// failed, else 0.
pub async fn each_id<F, Fut>(ids: impl IntoIterator<Item = String>, mut op: F) -> i32
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Result<(), ApiError>>,
{
    let mut failed = false;
    for id in ids {
        match op(id.clone()).await {
            Ok(()) => println!("{id}"),
            Err(e) => {
                error(&e, None);
                failed = true;
            }
        }
    }
    if failed {
        EXIT_CLEANROOM_ERROR
    } else {
        0
    }
}
