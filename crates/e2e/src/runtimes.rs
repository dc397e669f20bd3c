//! The suites that must hold under both isolation runtimes run once per runtime, from one
//! body: [`Runtime`] is the parameter (its `--runtime` flag for `sandbox create`, `exec`,
//! `pool create`), [`both_runtimes!`] generates a `linux` and a `gvisor` test from a
//! function taking it. A gvisor variant on a machine without `runsc` says SKIPPED and
//! passes (`scripts/deps.sh` installs it); nothing is stubbed.

/// The runtime a parameterized test runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Linux,
    Gvisor,
}

impl Runtime {
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Linux => "linux",
            Runtime::Gvisor => "gvisor",
        }
    }

    /// `["--runtime", name]`, for a command line.
    pub fn flag(self) -> [&'static str; 2] {
        ["--runtime", self.name()]
    }

    /// `args` with `--runtime NAME` inserted after the first `n` words (the verb):
    /// `rt.args(2, &["sandbox", "create", "--ttl", "9"])`.
    pub fn args<'a>(self, n: usize, args: &[&'a str]) -> Vec<&'a str> {
        let mut v: Vec<&'a str> = args[..n].to_vec();
        v.extend(self.flag());
        v.extend_from_slice(&args[n..]);
        v
    }

    /// Whether this machine can run it (gvisor: `runsc` on PATH); prints SKIPPED if not.
    pub fn available(self) -> bool {
        if self == Runtime::Linux {
            return true;
        }
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("runsc").is_file()));
        if !found {
            eprintln!("SKIPPED: runsc (gVisor) is not installed; scripts/deps.sh installs it");
        }
        found
    }
}

/// `both_runtimes!(name, body)` → `mod name { fn linux(); fn gvisor() }`, each calling
/// `body(Runtime::…)`; `both_runtimes!(async name, body)` for an async body (a
/// two-worker tokio runtime, as the async suites use).
#[macro_export]
macro_rules! both_runtimes {
    ($name:ident, $body:ident) => {
        mod $name {
            #[test]
            fn linux() {
                super::$body($crate::Runtime::Linux)
            }
            #[test]
            fn gvisor() {
                if $crate::Runtime::Gvisor.available() {
                    super::$body($crate::Runtime::Gvisor)
                }
            }
        }
    };
    (async $name:ident, $body:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn linux() {
                super::$body($crate::Runtime::Linux).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn gvisor() {
                if $crate::Runtime::Gvisor.available() {
                    super::$body($crate::Runtime::Gvisor).await
                }
            }
        }
    };
}

impl crate::Server {
    /// `sandbox create --runtime RT EXTRA…`; the new sandbox's id.
    pub fn create_on(&self, rt: Runtime, extra: &[&str]) -> String {
        let mut args = vec!["sandbox", "create", "--runtime", rt.name()];
        args.extend_from_slice(extra);
        let o = self.run(&args);
        let id = crate::stdout(&o).trim().to_string();
        assert!(
            id.starts_with("sbx_"),
            "sandbox create ({}) failed: {}",
            rt.name(),
            crate::stderr(&o)
        );
        id
    }
}
