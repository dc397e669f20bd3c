//! `sandbox.git`: git repositories the sandbox may fetch (and push to) over smart HTTP(S).
//!
//! ```yaml
//! sandbox:
//!   git:
//!     - url: https://git.example/org/app.git
//!       access: fetch        # fetch (default) | push (fetch and push)
//! ```
//!
//! The gateway terminates TLS for each named host and serves only the smart-HTTP endpoints
//! of declared repositories; `git-receive-pack` (push) only for `access: push`.

use crate::{HostPattern, NetworkPolicy, PolicyError, Rule};
use serde::{Deserialize, Serialize};

/// What a sandbox may do with a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GitAccess {
    Fetch,
    Push,
}

/// One compiled `sandbox.git` entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GitRule {
    pub host: String,
    pub port: u16,
    /// Repository path without a trailing `.git` or `/`, e.g. `/org/app`.
    pub path: String,
    pub access: GitAccess,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GitSection {
    url: String,
    #[serde(default)]
    access: Option<String>,
}

/// A repository path as the gateway compares it: no trailing `/` or `.git`.
pub fn repo_key(path: &str) -> &str {
    let p = path.trim_end_matches('/');
    p.strip_suffix(".git").unwrap_or(p)
}

fn valid_repo_path(p: &str) -> bool {
    p.starts_with('/')
        && p.len() > 1
        && p.len() <= 512
        && p.split('/').skip(1).all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~@+".contains(&b))
        })
}

pub(crate) fn compile_git(
    sections: Vec<GitSection>,
    network: &mut NetworkPolicy,
) -> Result<Vec<GitRule>, PolicyError> {
    let mut out: Vec<GitRule> = Vec::new();
    for (i, s) in sections.into_iter().enumerate() {
        let path = format!("sandbox.git[{i}]");
        let bad = |m: String| PolicyError::Invalid(format!("{path}.url: {m}"));
        let rest = s.url.trim().strip_prefix("https://").ok_or_else(|| {
            bad(format!(
                "{:?}: only https:// repositories are mediated",
                s.url
            ))
        })?;
        let (authority, repo) = rest
            .find('/')
            .map(|k| rest.split_at(k))
            .ok_or_else(|| bad(format!("{:?} names no repository", s.url)))?;
        if authority.contains('@') || repo.contains(['?', '#', '%']) {
            return Err(bad(format!(
                "{:?}: no credentials, query or escapes in the URL",
                s.url
            )));
        }
        let (host, port) = crate::registries::split_upstream(authority).map_err(bad)?;
        let key = repo_key(repo);
        if !valid_repo_path(key) {
            return Err(bad(format!("{:?} is not a usable repository path", s.url)));
        }
        let access = match s.access.as_deref().map(str::trim) {
            None | Some("fetch") => GitAccess::Fetch,
            Some("push") => GitAccess::Push,
            Some(a) => {
                return Err(PolicyError::Invalid(format!(
                    "{path}.access: {a:?} is not fetch or push"
                )))
            }
        };
        if out
            .iter()
            .any(|r| r.host == host && r.port == port && r.path == key)
        {
            return Err(PolicyError::Conflict(format!(
                "{path}: {} is declared twice",
                s.url
            )));
        }
        let reach = Rule::new(HostPattern::Exact(host.clone()), vec![port]);
        if !network.allow.iter().any(|r| r.covers(&reach)) {
            network.allow.push(reach);
            network.allow.sort();
        }
        out.push(GitRule {
            host,
            port,
            path: key.to_string(),
            access,
        });
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::compile;

    fn git(entry: &str) -> Result<crate::CompiledPolicy, crate::PolicyError> {
        compile(&format!("version: 1\nsandbox:\n  git:\n    - {entry}\n"))
    }

    #[test]
    fn schema() {
        let p = git("{url: 'https://Git.Test:8443/org/app.git/', access: push}").unwrap();
        let r = &p.git[0];
        assert_eq!(
            (r.host.as_str(), r.port, r.path.as_str(), r.access),
            ("git.test", 8443, "/org/app", super::GitAccess::Push)
        );
        assert!(p.network.decide("git.test", 8443).is_ok());
        assert_eq!(
            git("{url: 'https://git.test/org/app'}").unwrap().git[0].access,
            super::GitAccess::Fetch
        );
        for bad in [
            "{url: 'http://git.test/a'}",
            "{url: 'ssh://git.test/a'}",
            "{url: 'https://git.test'}",
            "{url: 'https://git.test/'}",
            "{url: 'https://u:p@git.test/a'}",
            "{url: 'https://git.test/a/../b'}",
            "{url: 'https://git.test/a?x=1'}",
            "{url: 'https://git.test/a%2f'}",
            "{url: 'https://git.test/a', access: admin}",
            "{url: 'https://git.test/a', extra: 1}",
        ] {
            assert!(git(bad).is_err(), "{bad}");
        }
        let twice = "version: 1\nsandbox:\n  git:\n    - {url: 'https://g.test/a.git'}\n    - {url: 'https://g.test/a'}\n";
        assert!(matches!(
            compile(twice),
            Err(crate::PolicyError::Conflict(_))
        ));
    }
}
