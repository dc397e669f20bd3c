//! Package registry mediation (`sandbox.registries`): the gateway terminates TLS for a
//! registry's host with the sandbox CA, understands the registry's URL scheme, serves only
//! what the lockfile pins (enforce mode), verifies every artifact against the lockfile's
//! integrity hash and keeps verified artifacts in a content-addressed cache shared by all
//! sandboxes of the server ([`cache`]).
//!
//! Nothing reaches a registry host any other way: plain HTTP to it is refused
//! (`registry_not_allowed`), and every TLS connection to it is terminated here whatever
//! else the policy says about the host.
//!
//! This folder is what is mediated (the registries bound at create, their URL schemes, the
//! cache, the body budget); serving it on a terminated connection is [`crate::mediate`].

pub mod budget;
pub mod cache;
pub mod npm;
pub mod pypi;

pub use cache::ArtifactCache;
pub use cleanroom_policy::registries::BoundRegistry;

use cleanroom_policy::git::GitRule;
use cleanroom_policy::HostPattern;

/// The registries one sandbox's gateway mediates, and the server's artifact cache.
#[derive(Debug, Default)]
pub struct Mediation {
    registries: Vec<BoundRegistry>,
    cache: Option<ArtifactCache>,
    git: Vec<GitRule>,
    budget: budget::Budget,
    /// pypi: where each file an index page linked lives upstream (by its sha256, hex), so
    /// the gateway's rewritten links can be fetched server-side.
    pypi_links: pypi::Links,
}

impl Mediation {
    /// No mediated registry (every host is ordinary egress).
    pub fn none() -> Mediation {
        Mediation::default()
    }

    /// Mediate `registries` (modes `enforce`/`warn`), caching artifacts in `cache`.
    pub fn new(registries: Vec<BoundRegistry>, cache: Option<ArtifactCache>) -> Mediation {
        Mediation {
            registries,
            cache,
            git: Vec::new(),
            budget: budget::Budget::default(),
            pypi_links: pypi::Links::default(),
        }
    }

    /// Charge the bodies this sandbox buffers to its owner's `share` too ([`crate::share`]).
    pub fn with_share(mut self, share: crate::share::Share) -> Mediation {
        self.budget = budget::Budget::new(share);
        self
    }

    /// Also mediate git smart-HTTP to these repositories (`sandbox.git`).
    pub fn with_git(mut self, git: Vec<GitRule>) -> Mediation {
        self.git = git;
        self
    }

    /// Is `host` a registry or git host (every TLS connection to it is terminated and
    /// mediated, plain HTTP to it refused)?
    pub fn mediates(&self, host: &str) -> bool {
        self.claims(host).is_some() || self.git.iter().any(|g| g.host == host)
    }

    /// The declared repositories on `host:port`.
    pub(crate) fn git_repos<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> impl Iterator<Item = &'a GitRule> + 'a {
        self.git
            .iter()
            .filter(move |g| g.host == host && g.port == port)
    }

    /// The registry served at `host` (its registry host or one of its file hosts), if any.
    pub fn claims(&self, host: &str) -> Option<&BoundRegistry> {
        self.registries
            .iter()
            .find(|r| r.host == host || r.files.iter().any(|(h, _)| h == host))
    }

    /// Hosts whose TLS the sandbox CA must be able to terminate.
    pub fn hosts(&self) -> Vec<HostPattern> {
        let mut hosts: Vec<String> = self
            .registries
            .iter()
            .flat_map(|r| {
                std::iter::once(r.host.clone()).chain(r.files.iter().map(|(h, _)| h.clone()))
            })
            .chain(self.git.iter().map(|g| g.host.clone()))
            .collect();
        hosts.sort();
        hosts.dedup();
        hosts.into_iter().map(HostPattern::Exact).collect()
    }

    pub(crate) fn budget(&self) -> &budget::Budget {
        &self.budget
    }

    pub(crate) fn cache(&self) -> Option<&ArtifactCache> {
        self.cache.as_ref()
    }

    pub(crate) fn pypi_links(&self) -> &pypi::Links {
        &self.pypi_links
    }
}
