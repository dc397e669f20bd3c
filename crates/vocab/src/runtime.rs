//! The isolation runtimes a sandbox can be created on (`sandbox.runtime` in the policy,
//! `--runtime` on the CLI, `runtime` on the API, `serve --default-runtime`). One typed
//! name, so the policy, the server and the backends agree on what `gvisor` means.

stable_codes! {
    /// Which isolation technology runs a sandbox.
    pub enum Runtime {
        /// Linux namespaces, seccomp and landlock on the host kernel.
        Linux => "linux",
        /// gVisor (`runsc`): a user-space kernel between the sandbox and the host kernel.
        Gvisor => "gvisor",
    }
}
