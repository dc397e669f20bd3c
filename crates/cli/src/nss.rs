//! Name services of the statically linked binary.
//!
//! Why: `cleanroom` is linked statically (`.cargo/config.toml`) for its start-up time, and
//! a static glibc answers a name-service lookup (a group by name, a host, the user of a
//! uid) by `dlopen`ing the NSS modules `/etc/nsswitch.conf` names. A module is built
//! against the shared libc, so loading it into a static process crashes it — on Debian 12,
//! whose `group: files systemd` hands every group not in `/etc/group` to
//! `libnss_systemd`, the server's lookup of group `cleanroom` did exactly that. So, first
//! thing in `main` (one thread, nothing looked up yet), every database this process may
//! use is pinned to the services built into glibc itself: `files`, and `dns` for hosts.
//! Names then resolve from `/etc/hosts`, `/etc/resolv.conf`, `/etc/passwd` and
//! `/etc/group`, as in Go's static builds; other sources (LDAP, sssd, mDNS,
//! systemd-resolved's NSS module — its stub resolver in `resolv.conf` still answers) are
//! not consulted, and no module is ever loaded into the server.
//!
//! A dynamically linked build keeps the host's configuration (nothing is pinned).

/// Each NSS database this binary may look up, and the built-in services it may use.
#[cfg(target_feature = "crt-static")]
const PINNED: &[(&std::ffi::CStr, &std::ffi::CStr)] = &[
    (c"passwd", c"files"),
    (c"group", c"files"),
    (c"shadow", c"files"),
    (c"gshadow", c"files"),
    (c"hosts", c"files dns"),
    (c"networks", c"files"),
    (c"services", c"files"),
    (c"protocols", c"files"),
    (c"rpc", c"files"),
    (c"ethers", c"files"),
    (c"netgroup", c"files"),
    (c"publickey", c"files"),
    (c"aliases", c"files"),
    (c"initgroups", c"files"),
];

/// Pin every database to glibc's built-in services (see the module doc). Must run before
/// any other thread exists and before any lookup. Fails closed: a database that cannot be
/// pinned is an error the caller exits on, since a later lookup could load a module.
#[cfg(target_feature = "crt-static")]
pub fn pin_builtin_services() -> Result<(), String> {
    extern "C" {
        /// glibc: replace `db`'s service list from nsswitch.conf with `services`.
        fn __nss_configure_lookup(
            db: *const std::ffi::c_char,
            services: *const std::ffi::c_char,
        ) -> std::ffi::c_int;
    }
    for (db, services) in PINNED {
        // SAFETY: both are NUL-terminated static strings; glibc copies what it keeps. The
        // call mutates global NSS state: the caller runs it before any other thread
        // exists and before any lookup (first thing in `main`).
        if unsafe { __nss_configure_lookup(db.as_ptr(), services.as_ptr()) } != 0 {
            return Err(format!(
                "cannot pin name service database {db:?} to {services:?}"
            ));
        }
    }
    Ok(())
}

/// Nothing to pin: a dynamic build loads the host's NSS modules as any program does.
#[cfg(not(target_feature = "crt-static"))]
pub fn pin_builtin_services() -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::ToSocketAddrs;

    /// The lookups the binary makes, of names no file holds, after pinning: each falls
    /// through `files` (and `dns`) and answers "not found". Unpinned, on a host whose
    /// nsswitch.conf names a module after `files` (Debian 12: `group: files systemd`), the
    /// group lookup loads that module into this static test process and it crashes.
    #[test]
    fn unknown_names_are_not_found_without_loading_a_module() {
        super::pin_builtin_services().expect("pinned");
        let group = nix::unistd::Group::from_name("cleanroom-no-such-group-0f3a");
        assert!(matches!(group, Ok(None)), "{group:?}");
        let user = nix::unistd::User::from_name("cleanroom-no-such-user-0f3a");
        assert!(matches!(user, Ok(None)), "{user:?}");
        let uid = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(3_999_999_999));
        assert!(matches!(uid, Ok(None)), "{uid:?}");
        assert!(("no-such-host.invalid", 0).to_socket_addrs().is_err());
        // And the known ones still resolve.
        assert!(matches!(nix::unistd::Group::from_name("root"), Ok(Some(_))));
        assert!(("localhost", 0).to_socket_addrs().is_ok());
        // A module that loads without crashing would be caught here.
        assert_eq!(shared_objects(), Vec::<String>::new());
    }

    /// Shared objects mapped into this process.
    fn shared_objects() -> Vec<String> {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        let mut found: Vec<String> = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .filter(|path| {
                let name = path.rsplit('/').next().unwrap_or(path);
                name.ends_with(".so") || name.contains(".so.")
            })
            .map(str::to_string)
            .collect();
        found.dedup();
        found
    }

    /// What `.cargo/config.toml` promises: the binary and its tests are linked statically
    /// (no shared libc mapped into this process).
    #[test]
    fn this_build_is_static() {
        assert_eq!(shared_objects(), Vec::<String>::new());
    }
}
