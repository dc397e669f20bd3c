//! The docs tables of `docs/architecture.md` list exactly the codes defined here.

use crate::{Capability, Decision, DenyReason, ErrorCode, FailReason};
use std::collections::BTreeSet;

const ARCHITECTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/architecture.md"
));

/// The backticked first column of the table that follows `heading` in the architecture doc.
fn table_codes(heading: &str) -> BTreeSet<String> {
    let start = ARCHITECTURE
        .lines()
        .position(|l| l.trim() == heading)
        .unwrap_or_else(|| panic!("docs/architecture.md has no {heading:?} heading"));
    let rows: Vec<&str> = ARCHITECTURE
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
        "{heading} in docs/architecture.md diverges from cleanroom-vocab: \
         missing rows {undocumented:?}, rows for undefined codes {unknown:?}"
    );
}

#[test]
fn error_code_table_matches_the_enum() {
    check("### Error codes", ErrorCode::ALL.iter().map(|c| c.as_str()));
}

#[test]
fn egress_reason_table_matches_the_enums() {
    check(
        "### Egress decisions and reason codes",
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
        "### Capability keys",
        Capability::ALL.iter().map(|c| c.as_str()),
    );
}
