//! `cleanroom image pull REF --pin`: write a resolved digest reference into
//! `cleanroom.yaml` as `sandbox.image.ref`.
//!
//! The file is the user's: comments, key order, quoting and blank lines must survive. So the
//! edit is textual (the one `ref:` line replaced, or the few lines it needs inserted), never
//! a re-serialisation. Because a line edit of YAML can go wrong in ways a parser would not
//! (flow style, odd indentation, quoted keys), every edit is then checked: the new text,
//! parsed, must equal the old text parsed with exactly `sandbox.image.ref` changed, and must
//! compile with the server's policy compiler. Anything else is refused and the file is left
//! untouched (fail closed; the message says what to write by hand).

use serde_json::Value;
use std::path::Path;

/// Why a pin could not be written (the CLI reports it as `policy_invalid`).
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("{0}")]
    Layout(String),
    #[error("{path}: {msg}")]
    Io { path: String, msg: String },
}

/// A line split into indentation, key and the rest after `key:`.
struct KeyLine<'a> {
    indent: usize,
    key: &'a str,
    /// After the colon, without the line ending (may hold a value and/or a comment).
    rest: &'a str,
}

fn body(line: &str) -> &str {
    line.trim_end_matches(['\n', '\r'])
}

fn is_blank(line: &str) -> bool {
    let t = body(line).trim();
    t.is_empty() || t.starts_with('#')
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn key_line(line: &str) -> Option<KeyLine<'_>> {
    let b = body(line);
    let ind = indent(b);
    let t = &b[ind..];
    let colon = t.find(':')?;
    let key = &t[..colon];
    let rest = &t[colon + 1..];
    if key.is_empty()
        || !key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        || !(rest.is_empty() || rest.starts_with([' ', '\t']))
    {
        return None;
    }
    Some(KeyLine {
        indent: ind,
        key,
        rest,
    })
}

/// Only a comment (or nothing) after the colon: a block mapping follows.
fn opens_block(rest: &str) -> bool {
    let r = rest.trim();
    r.is_empty() || r.starts_with('#')
}

/// End (exclusive) of the block that the line at `start` opens: the next non-blank line
/// indented at most `indent`.
fn block_end(lines: &[&str], start: usize, indent_of_key: usize) -> usize {
    (start + 1..lines.len())
        .find(|&i| !is_blank(lines[i]) && indent(lines[i]) <= indent_of_key)
        .unwrap_or(lines.len())
}

fn child_indent(lines: &[&str], start: usize, end: usize, fallback: usize) -> usize {
    (start + 1..end)
        .find(|&i| !is_blank(lines[i]))
        .map_or(fallback, |i| indent(lines[i]))
}

fn line_ending(line: &str) -> &str {
    &line[body(line).len()..]
}

/// The text with `sandbox.image.ref` set to `reference`, edited in place.
pub fn set_image_ref(text: &str, reference: &str) -> Result<String, PinError> {
    let edited = edit(text, reference)?;
    check(text, &edited, reference)?;
    Ok(edited)
}

fn flow(what: &str, reference: &str) -> PinError {
    PinError::Layout(format!(
        "{what} is not a block mapping; set `sandbox.image.ref: {reference}` by hand"
    ))
}

fn edit(text: &str, reference: &str) -> Result<String, PinError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let nl = lines
        .first()
        .map(|l| line_ending(l))
        .filter(|e| !e.is_empty())
        .unwrap_or("\n");
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let sandbox = lines
        .iter()
        .position(|l| key_line(l).is_some_and(|k| k.indent == 0 && k.key == "sandbox"));
    let Some(s) = sandbox else {
        // No sandbox section: append one.
        let mut t = text.to_string();
        if !t.is_empty() && !t.ends_with('\n') {
            t += nl;
        }
        if t.trim().is_empty() {
            t = format!("version: 1{nl}");
        }
        return Ok(format!(
            "{t}sandbox:{nl}  image:{nl}    ref: {reference}{nl}"
        ));
    };
    let sk = key_line(lines[s]).ok_or_else(|| flow("sandbox", reference))?;
    if !opens_block(sk.rest) {
        return Err(flow("sandbox", reference));
    }
    let s_end = block_end(&lines, s, 0);
    let ci = child_indent(&lines, s, s_end, 2);
    if ci == 0 {
        return Err(flow("sandbox", reference));
    }
    let image = (s + 1..s_end)
        .find(|&i| key_line(lines[i]).is_some_and(|k| k.indent == ci && k.key == "image"));
    let Some(im) = image else {
        let pad = " ".repeat(ci);
        out.insert(
            s + 1,
            format!("{pad}image:{nl}{pad}{pad}ref: {reference}{nl}"),
        );
        return Ok(out.concat());
    };
    let ik = key_line(lines[im]).ok_or_else(|| flow("sandbox.image", reference))?;
    if !opens_block(ik.rest) {
        return Err(flow("sandbox.image", reference));
    }
    let i_end = block_end(&lines, im, ci);
    let gi = child_indent(&lines, im, i_end, ci + ci);
    let r = (im + 1..i_end)
        .find(|&i| key_line(lines[i]).is_some_and(|k| k.indent == gi && k.key == "ref"));
    match r {
        None => out.insert(im + 1, format!("{}ref: {reference}{nl}", " ".repeat(gi))),
        Some(r) => {
            let rk = key_line(lines[r]).ok_or_else(|| flow("sandbox.image.ref", reference))?;
            // Keep a trailing comment (references never contain `#`).
            let comment = rk
                .rest
                .find(" #")
                .map_or("", |at| &rk.rest[rk.rest[..at].trim_end().len()..]);
            out[r] = format!(
                "{}ref: {reference}{comment}{}",
                " ".repeat(gi),
                line_ending(lines[r])
            );
        }
    }
    Ok(out.concat())
}

fn parse(text: &str, which: &str) -> Result<Value, PinError> {
    serde_saphyr::from_str::<Value>(text)
        .map_err(|e| PinError::Layout(format!("{which} is not valid YAML: {e}")))
}

/// The edit changed `sandbox.image.ref` and nothing else, and the result compiles.
fn check(old: &str, new: &str, reference: &str) -> Result<(), PinError> {
    let mut want = if old.trim().is_empty() {
        serde_json::json!({"version": 1})
    } else {
        parse(old, "the policy file")?
    };
    let root = want
        .as_object_mut()
        .ok_or_else(|| flow("the policy file", reference))?;
    let sandbox = root
        .entry("sandbox")
        .or_insert_with(|| Value::Object(Default::default()));
    if sandbox.is_null() {
        *sandbox = Value::Object(Default::default());
    }
    let image = sandbox
        .as_object_mut()
        .ok_or_else(|| flow("sandbox", reference))?
        .entry("image")
        .or_insert_with(|| Value::Object(Default::default()));
    if image.is_null() {
        *image = Value::Object(Default::default());
    }
    image
        .as_object_mut()
        .ok_or_else(|| flow("sandbox.image", reference))?
        .insert("ref".into(), Value::String(reference.into()));
    let got = parse(new, "the edited policy")?;
    if got != want {
        return Err(PinError::Layout(format!(
            "could not edit the file's layout safely; set `sandbox.image.ref: {reference}` by hand"
        )));
    }
    cleanroom_client::policy::compile(new)
        .map(drop)
        .map_err(|e| PinError::Layout(format!("the policy with the pin does not compile: {e}")))
}

/// Pin `reference` into the policy file at `path` (created, `version: 1`, when absent).
/// The write is atomic (a sibling temp file renamed over it) and keeps the file's mode; a
/// symbolic link is followed to the file it names, which is what gets replaced.
pub fn write_pin(path: &Path, reference: &str) -> Result<(), PinError> {
    let ioerr = |p: &Path, e: std::io::Error| PinError::Io {
        path: p.display().to_string(),
        msg: e.to_string(),
    };
    let (target, old, mode) = match std::fs::read_to_string(path) {
        Ok(t) => {
            let target = std::fs::canonicalize(path).map_err(|e| ioerr(path, e))?;
            let mode = std::fs::metadata(&target).map_err(|e| ioerr(path, e))?;
            (target, t, Some(mode.permissions()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            (path.to_path_buf(), String::new(), None)
        }
        Err(e) => return Err(ioerr(path, e)),
    };
    let new = set_image_ref(&old, reference)?;
    if new == old {
        return Ok(());
    }
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "cleanroom.yaml".into());
    let tmp = dir.join(format!(".{name}.pin-{}", std::process::id()));
    let written = std::fs::write(&tmp, &new)
        .and_then(|()| match &mode {
            Some(m) => std::fs::set_permissions(&tmp, m.clone()),
            None => Ok(()),
        })
        .and_then(|()| std::fs::rename(&tmp, &target));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(ioerr(&target, e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> String {
        format!("127.0.0.1:5000/lib/py:3.12@sha256:{}", "a".repeat(64))
    }

    #[test]
    fn replaces_the_ref_line_and_keeps_everything_else() {
        let old = "# my policy\nversion: 1   # v1\n\nsandbox:\n  # base image\n  image:\n    ref: 127.0.0.1:5000/lib/py:3.12   # was a tag\n  env:\n    CI: \"true\"\n";
        let new = set_image_ref(old, &r()).unwrap();
        assert_eq!(
            new,
            old.replace(
                "ref: 127.0.0.1:5000/lib/py:3.12   # was a tag",
                &format!("ref: {}   # was a tag", r())
            )
        );
    }

    #[test]
    fn inserts_what_is_missing_at_the_files_indentation() {
        let old = "version: 1\nsandbox:\n    env:\n        A: b\n";
        let new = set_image_ref(old, &r()).unwrap();
        assert_eq!(
            new,
            format!(
                "version: 1\nsandbox:\n    image:\n        ref: {}\n    env:\n        A: b\n",
                r()
            )
        );
        let old = "version: 1\nsandbox:\n  image:\n  env:\n    A: b\n";
        let new = set_image_ref(old, &r()).unwrap();
        assert!(
            new.contains(&format!("  image:\n    ref: {}\n  env:", r())),
            "{new}"
        );
        let old = "version: 1 # keep\nrepository:\n  path: /workspace/app";
        let new = set_image_ref(old, &r()).unwrap();
        assert_eq!(
            new,
            format!("{old}\nsandbox:\n  image:\n    ref: {}\n", r())
        );
        assert_eq!(
            set_image_ref("", &r()).unwrap(),
            format!("version: 1\nsandbox:\n  image:\n    ref: {}\n", r())
        );
        // CRLF files stay CRLF.
        let new = set_image_ref("version: 1\r\nsandbox:\r\n  env: {}\r\n", &r()).unwrap();
        assert!(
            new.contains(&format!("  image:\r\n    ref: {}\r\n", r())),
            "{new:?}"
        );
    }

    #[test]
    fn layouts_it_cannot_edit_safely_are_refused() {
        for old in [
            "version: 1\nsandbox: {image: {ref: x}}\n",
            "version: 1\nsandbox:\n  image: {ref: x}\n",
            "version: 1\nsandbox:\n  \"image\":\n    ref: x\n",
            "version: 1\nsandbox:\n  network:\n    default: allow\n", // does not compile
            "- a\n- b\n",
        ] {
            assert!(
                matches!(set_image_ref(old, &r()), Err(PinError::Layout(_))),
                "{old}"
            );
        }
    }

    #[test]
    fn write_pin_is_atomic_and_keeps_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cleanroom.yaml");
        std::fs::write(&p, "version: 1\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_pin(&p, &r()).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.ends_with(&format!("ref: {}\n", r())), "{text}");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // A refused edit leaves the file as it was.
        std::fs::write(&p, "sandbox: {a: 1}\n").unwrap();
        assert!(write_pin(&p, &r()).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "sandbox: {a: 1}\n");
    }
}
