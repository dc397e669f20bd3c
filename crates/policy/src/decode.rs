//! YAML decoding errors that say what a field wants. The YAML layer only knows types
//! ("invalid u32", "expected sequence start"); here the error gets the field's path
//! (`sandbox.network.allow[0].ports[0]`), what the field takes ("a port number 1-65535"),
//! what was given (`"abc"`) and where (line and column).

use serde::de::DeserializeOwned;

/// Deserialize `yaml` into `T`; an error names the field, what it takes and what it got.
pub(crate) fn from_yaml<T: DeserializeOwned>(yaml: &str) -> Result<T, String> {
    let mut path = String::new();
    serde_saphyr::with_deserializer_from_str(yaml, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = e.path().to_string();
            e.into_inner()
        })
    })
    .map_err(|e| explain(yaml, &path, &e))
}

fn explain(yaml: &str, path: &str, e: &serde_saphyr::Error) -> String {
    let full = e.to_string();
    let at = e.location().filter(|l| l.line() > 0);
    // The message without the snippet: the first line, without its `error: line N column
    // M: ` prefix.
    let first = full.lines().next().unwrap_or_default();
    let msg = first
        .strip_prefix("error: ")
        .unwrap_or(first)
        .split_once(": ")
        .filter(|(head, _)| head.starts_with("line "))
        .map(|(_, m)| m)
        .unwrap_or(first);
    let field = path
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .split('[')
        .next()
        .unwrap_or_default();
    let wanted = if msg.starts_with("invalid u") || msg.starts_with("invalid i") {
        Some(format!("expected {}", number_wanted(field, path)))
    } else if msg.starts_with("expected sequence start") {
        Some(match field {
            "ports" => "expected a list of port numbers, like [443]".to_string(),
            _ => "expected a list (`[a, b]` or one `- item` per line)".to_string(),
        })
    } else {
        None
    };
    let Some(wanted) = wanted else {
        return match path {
            "" | "." => full,
            p => format!("{p}: {full}"),
        };
    };
    let got = at
        .and_then(|l| token_at(yaml, l.line(), l.column()))
        .map(|t| format!(", got {t:?}"))
        .unwrap_or_default();
    let place = at
        .map(|l| format!(" (line {} column {})", l.line(), l.column()))
        .unwrap_or_default();
    format!("{path}: {wanted}{got}{place}")
}

/// What a numeric field takes, by its name.
fn number_wanted(field: &str, path: &str) -> String {
    if field == "ports" || field == "port" {
        return "a port number 1-65535".into();
    }
    if field == "version" && !path.contains('.') {
        return "1 (the only policy version)".into();
    }
    if let Some((lo, hi)) = crate::resource_bounds(field) {
        let unit = match field {
            "memory_mb" | "disk_mb" | "output_mb" => " (MiB)",
            "cpu_millis" => " (milli-CPUs, 1000 = one core)",
            _ => "",
        };
        return format!("a whole number {lo}-{hi}{unit}");
    }
    if field.ends_with("_seconds") || field.ends_with("_secs") || field.ends_with("timeout") {
        return "a whole number of seconds".into();
    }
    "a whole number".into()
}

/// The scalar at 1-based `line`/`column` of `yaml`: up to a YAML delimiter, unquoted.
fn token_at(yaml: &str, line: u64, column: u64) -> Option<String> {
    let text = yaml
        .lines()
        .nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let start = text
        .char_indices()
        .nth(usize::try_from(column).ok()?.checked_sub(1)?)
        .map(|(i, _)| i)?;
    let rest = &text[start..];
    let end = rest.find([',', ']', '}', '#']).unwrap_or(rest.len());
    let t = rest[..end].trim().trim_matches(['"', '\'']);
    (!t.is_empty()).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use crate::compile;

    fn err(yaml: &str) -> String {
        compile(yaml)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn a_string_where_a_number_belongs_says_what_the_field_wants() {
        let e = err("version: 1\nsandbox:\n  network:\n    allow:\n      - host: x.com\n        ports: [abc]\n");
        assert!(
            e.contains("sandbox.network.allow[0].ports[0]: expected a port number 1-65535, got \"abc\" (line 6 column 17)"),
            "{e}"
        );
        assert!(!e.contains("invalid u"), "{e}");
        let e = err("version: 1\nsandbox:\n  resources:\n    memory_mb: lots\n");
        assert!(
            e.contains("sandbox.resources.memory_mb: expected a whole number 16-1048576 (MiB), got \"lots\""),
            "{e}"
        );
        let e = err("version: one\n");
        assert!(
            e.contains("version: expected 1 (the only policy version), got \"one\""),
            "{e}"
        );
        let e = err("version: 1\nsandbox:\n  network:\n    allow:\n      - host: x.com\n        ports: 443\n");
        assert!(
            e.contains(
                "sandbox.network.allow[0].ports: expected a list of port numbers, like [443]"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_url_where_a_host_belongs_says_drop_the_scheme() {
        let e = err("version: 1\nsandbox:\n  network:\n    allow:\n      - host: https://x.com\n        ports: [443]\n");
        assert!(
            e.contains("host must be a host name like api.example.com, not a URL; drop the scheme `https://`"),
            "{e}"
        );
        assert!(!e.contains("give the port in `ports`"), "{e}");
        let e = err("version: 1\nsandbox:\n  network:\n    allow:\n      - host: x.com/api\n        ports: [443]\n");
        assert!(e.contains("host name only, without a path"), "{e}");
        // A port in the host still says where the port goes.
        let e = err("version: 1\nsandbox:\n  network:\n    allow:\n      - host: x.com:8443\n        ports: [443]\n");
        assert!(e.contains("give the port in `ports`"), "{e}");
    }
}
