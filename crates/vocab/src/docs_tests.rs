//! The docs tables of `docs/reference/codes.md` list exactly the codes defined here, and
//! the error table's Connect column says what `ErrorCode::connect_class` does.

use crate::{Capability, ConnectClass, Decision, DenyReason, ErrorCode, FailReason};
use std::collections::BTreeSet;

const CODES: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/reference/codes.md"
));

/// The backticked first column of the table that follows `heading` in the architecture doc.
fn table_codes(heading: &str) -> BTreeSet<String> {
    let start = CODES
        .lines()
        .position(|l| l.trim() == heading)
        .unwrap_or_else(|| panic!("docs/reference/codes.md has no {heading:?} heading"));
    let rows: Vec<&str> = CODES
        .lines()
        .skip(start + 1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // header and separator
        .collect();
    assert!(!rows.is_empty(), "{heading}: no table rows");
    rows.iter()
        .map(|row| {
            let first = row.split('|').nth(1).unwrap_or_default().trim();
            first.trim_matches('`').to_string()
        })
        .collect()
}

fn check(heading: &str, codes: impl IntoIterator<Item = &'static str>) {
    let defined: BTreeSet<String> = codes.into_iter().map(String::from).collect();
    let documented = table_codes(heading);
    let undocumented: Vec<_> = defined.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&defined).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "{heading} in docs/reference/codes.md diverges from cleanroom-vocab: \
         missing rows {undocumented:?}, rows for undefined codes {unknown:?}"
    );
}

#[test]
fn error_code_table_matches_the_enum() {
    check("## Error codes", ErrorCode::ALL.iter().map(|c| c.as_str()));
}

#[test]
fn egress_reason_table_matches_the_enums() {
    check(
        "## Egress decisions and reason codes",
        Decision::ALL
            .iter()
            .map(|c| c.as_str())
            .chain(DenyReason::ALL.iter().map(|c| c.as_str()))
            .chain(FailReason::ALL.iter().map(|c| c.as_str())),
    );
}

#[test]
fn capability_table_matches_the_enum() {
    check(
        "## Capability keys",
        Capability::ALL.iter().map(|c| c.as_str()),
    );
}

/// `InvalidArgument` -> `invalid_argument`: the Connect spelling the table uses.
fn snake(class: ConnectClass) -> String {
    let mut out = String::new();
    for (i, ch) in format!("{class:?}").chars().enumerate() {
        if ch.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

#[test]
fn error_code_table_gives_each_codes_connect_class() {
    let start = CODES
        .lines()
        .position(|l| l.trim() == "## Error codes")
        .expect("an Error codes heading");
    for row in CODES
        .lines()
        .skip(start + 1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
    {
        let cols: Vec<&str> = row.split('|').map(str::trim).collect();
        let code: ErrorCode = cols[1].trim_matches('`').parse().expect("a defined code");
        let documented = cols[2];
        if code.is_client_side() {
            assert!(
                documented.starts_with("(client side"),
                "{code}: a client-side code is documented as {documented:?}"
            );
            continue;
        }
        let first = documented.split(" / ").next().unwrap_or_default();
        assert_eq!(
            first,
            snake(code.connect_class()),
            "{code}: docs/reference/codes.md says {documented:?}, connect_class() differs"
        );
    }
}
