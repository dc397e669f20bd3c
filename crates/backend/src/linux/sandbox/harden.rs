//! Least privilege for everything inside a sandbox, applied by pid 1 once the root is built
//! and inherited by every process it spawns:
//!
//! 1. not dumpable — `/proc/1/exe` (the host's `cleanroom` binary) and pid 1's memory are
//!    out of reach of sandbox processes;
//! 2. landlock — the whole tree is read/execute only, except `/tmp`, `/workspace`, `/root`
//!    and `/dev`;
//! 3. no_new_privs — setuid binaries and file capabilities grant nothing;
//! 4. capabilities — bounding, ambient, inheritable, permitted and effective sets cleared,
//!    and `SECBIT_NOROOT` locked so uid 0 regains nothing on exec;
//! 5. seccomp — Docker's default-profile denials (mount API, namespaces, ptrace, kexec, bpf,
//!    perf, keyrings, modules, io_uring, userfaultfd, time, reboot, personality tricks,
//!    TIOCSTI, ...). Denied calls fail with EPERM; `clone3` fails with ENOSYS so libc falls
//!    back to `clone`, whose namespace flags are then checked. Every x32 syscall (the
//!    x86_64 arch with bit 30 set in the number) fails with EPERM: the deny-list names
//!    x86_64 numbers, and on a kernel with the x32 ABI enabled `mount` as
//!    `0x40000000 | 165` would otherwise pass it. Any other arch (i386 through `int 0x80`)
//!    kills the process.
//!
//! Every step must succeed, or the sandbox fails to launch (fail closed). What was applied
//! is reported to the server for `sandbox inspect`.

use super::seccomp_bpf::{program, Check, Verdict};
use crate::linux::sys;
use landlock::{
    path_beneath_rules, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, ABI,
};
use seccompiler::BpfProgram;
use std::collections::{BTreeMap, HashMap};

pub use crate::linux::config::WRITABLE;

/// Syscalls denied outright (EPERM).
const DENIED: &[(&str, i64)] = &[
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("kcmp", libc::SYS_kcmp),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("acct", libc::SYS_acct),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("reboot", libc::SYS_reboot),
    ("settimeofday", libc::SYS_settimeofday),
    ("clock_settime", libc::SYS_clock_settime),
    ("clock_adjtime", libc::SYS_clock_adjtime),
    ("sethostname", libc::SYS_sethostname),
    ("setdomainname", libc::SYS_setdomainname),
    ("syslog", libc::SYS_syslog),
    ("quotactl", libc::SYS_quotactl),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("lookup_dcookie", libc::SYS_lookup_dcookie),
    ("iopl", libc::SYS_iopl),
    ("ioperm", libc::SYS_ioperm),
    ("vhangup", libc::SYS_vhangup),
    ("uselib", libc::SYS_uselib),
    ("ustat", libc::SYS_ustat),
    ("sysfs", libc::SYS_sysfs),
    ("_sysctl", libc::SYS__sysctl),
    ("fanotify_init", libc::SYS_fanotify_init),
];

const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    0x80, // CLONE_NEWTIME
];

/// Personalities Docker allows: Linux, Linux32 and their UNAME26 variants, and the query.
const PERSONALITIES: &[u64] = &[0x0, 0x8, 0x20000, 0x20008, 0xffff_ffff];

/// The whole policy as one program ([`super::seccomp_bpf`]): the deny-list and the
/// argument checks with EPERM, `clone3` with ENOSYS, every x32 number with EPERM, a
/// foreign arch killed.
fn seccomp_program() -> Result<BpfProgram, String> {
    let eperm = Verdict::Errno(libc::EPERM as u32);
    let mut rules: BTreeMap<u32, Check> = DENIED
        .iter()
        .map(|(_, nr)| (*nr as u32, Check::Always(eperm)))
        .collect();
    // clone(flags, ...) creating any namespace.
    rules.insert(
        libc::SYS_clone as u32,
        Check::AnyBitOf {
            arg: 0,
            mask: NAMESPACE_FLAGS.iter().fold(0, |m, f| m | *f as u32),
            then: eperm,
        },
    );
    // personality(p) for anything but the allowed set.
    rules.insert(
        libc::SYS_personality as u32,
        Check::NoneOf {
            arg: 0,
            values: PERSONALITIES.iter().map(|p| *p as u32).collect(),
            then: eperm,
        },
    );
    // ioctl(fd, TIOCSTI/TIOCLINUX): typing into another terminal.
    rules.insert(
        libc::SYS_ioctl as u32,
        Check::OneOf {
            arg: 1,
            values: vec![libc::TIOCSTI as u32, libc::TIOCLINUX as u32],
            then: eperm,
        },
    );
    rules.insert(
        libc::SYS_clone3 as u32,
        Check::Always(Verdict::Errno(libc::ENOSYS as u32)),
    );
    program(&rules, eperm)
}

fn landlock(extra_writable: &[String]) -> Result<&'static str, String> {
    let abi = ABI::V5;
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|r| r.add_rules(path_beneath_rules(WRITABLE, AccessFs::from_all(abi))))
        .and_then(|r| r.add_rules(path_beneath_rules(extra_writable, AccessFs::from_all(abi))))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("landlock: {e}"))?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok("enforced"),
        RulesetStatus::PartiallyEnforced => Ok("partially enforced (older kernel ABI)"),
        // Fail closed: the writable-paths restriction is part of the sandbox contract.
        RulesetStatus::NotEnforced => Err("landlock is not available on this kernel".into()),
    }
}

fn drop_capabilities() -> Result<(), String> {
    use caps::CapSet;
    // uid 0 gets no capabilities from exec, and this cannot be undone.
    sys::lock_securebits().map_err(|e| format!("securebits: {e}"))?;
    for cap in caps::all() {
        caps::drop(None, CapSet::Bounding, cap)
            .map_err(|e| format!("drop {cap} from bounding set: {e}"))?;
    }
    for set in [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        caps::clear(None, set).map_err(|e| format!("clear capabilities: {e}"))?;
    }
    Ok(())
}

/// Apply every restriction to the calling process (pid 1). Returns facts for inspect.
/// `extra_writable`: more paths that stay writable (an image root's top-level directories,
/// whose writes land in the sandbox's own copy-on-write layer).
pub fn apply(extra_writable: &[String]) -> Result<HashMap<String, String>, String> {
    let seccomp = seccomp_program()?;
    let mut info = HashMap::new();
    nix::sys::prctl::set_dumpable(false).map_err(|e| format!("dumpable: {e}"))?;
    info.insert(
        "landlock".to_string(),
        landlock(extra_writable)?.to_string(),
    );
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("no_new_privs: {e}"))?;
    info.insert("no_new_privs".into(), "true".into());
    drop_capabilities()?;
    info.insert("capabilities".into(), "none".into());
    seccompiler::apply_filter(&seccomp).map_err(|e| format!("seccomp: {e}"))?;
    info.insert(
        "seccomp".into(),
        format!(
            "deny-list ({} syscalls + clone namespaces, personality, TIOCSTI; x32 denied)",
            DENIED.len() + 1
        ),
    );
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::super::seccomp_bpf::{interp, AUDIT_ARCH_X86_64, X32_SYSCALL_BIT};
    use super::*;
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
        SeccompFilter, SeccompRule, TargetArch,
    };

    fn cond(arg: u8, op: Op, value: u64) -> Cond {
        Cond::new(arg, Len::Dword, op, value).unwrap()
    }

    fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> BpfProgram {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            TargetArch::x86_64,
        )
        .unwrap();
        BpfProgram::try_from(filter).unwrap()
    }

    /// The same policy as seccompiler programs (how it was applied before the tree, as
    /// three filters): the reference the tree must agree with.
    fn reference() -> [BpfProgram; 2] {
        let mut deny: BTreeMap<i64, Vec<SeccompRule>> =
            DENIED.iter().map(|(_, nr)| (*nr, Vec::new())).collect();
        let clone_rules = NAMESPACE_FLAGS
            .iter()
            .map(|f| SeccompRule::new(vec![cond(0, Op::MaskedEq(*f), *f)]).unwrap())
            .collect();
        deny.insert(libc::SYS_clone, clone_rules);
        let not_allowed = PERSONALITIES.iter().map(|p| cond(0, Op::Ne, *p)).collect();
        deny.insert(
            libc::SYS_personality,
            vec![SeccompRule::new(not_allowed).unwrap()],
        );
        deny.insert(
            libc::SYS_ioctl,
            vec![
                SeccompRule::new(vec![cond(1, Op::Eq, libc::TIOCSTI)]).unwrap(),
                SeccompRule::new(vec![cond(1, Op::Eq, libc::TIOCLINUX)]).unwrap(),
            ],
        );
        let mut nosys = BTreeMap::new();
        nosys.insert(libc::SYS_clone3, Vec::new());
        [compile(deny, libc::EPERM), compile(nosys, libc::ENOSYS)]
    }

    /// The x32 denial as it was attached before the tree (b7d5df3), instruction for
    /// instruction: load the arch; not x86_64 → allow (the deny-list kills it); load the
    /// number; >= 0x40000000 → EPERM; else allow.
    fn x32_reference() -> BpfProgram {
        use seccompiler::sock_filter;
        let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
        vec![
            op(0x20, 0, 0, 4),
            op(0x15, 0, 3, 0xc000_003e),
            op(0x20, 0, 0, 0),
            op(0x35, 0, 1, 0x4000_0000),
            op(0x06, 0, 0, 0x0005_0001),
            op(0x06, 0, 0, 0x7fff_0000),
        ]
    }

    /// The reference's verdict: the three programs as they were attached.
    fn expected(reference: &[BpfProgram; 3], data: &[u8]) -> u32 {
        interp::run_all(&[&reference[0], &reference[1], &reference[2]], data)
    }

    #[test]
    fn same_verdicts_as_seccompiler() {
        let tree = seccomp_program().expect("the program builds");
        let [deny, nosys] = reference();
        let reference = [deny, nosys, x32_reference()];
        // Every argument value the rules distinguish, with and without high bits.
        let mut arg0: Vec<u64> = vec![0, 1, libc::SIGCHLD as u64, 0x0001_1f00, 0x0040_0000];
        arg0.extend(
            NAMESPACE_FLAGS
                .iter()
                .flat_map(|f| [*f, *f | 0x11, *f | 1 << 40]),
        );
        arg0.extend(
            PERSONALITIES
                .iter()
                .flat_map(|p| [*p, *p + 1, *p | 1 << 33]),
        );
        let arg1: Vec<u64> = vec![
            0,
            0x5401,
            libc::TIOCSTI,
            libc::TIOCLINUX,
            libc::TIOCSTI | 1 << 32,
            libc::TIOCSTI + 1,
        ];
        let mut nrs: Vec<u32> = (0..1024).collect();
        nrs.extend((0..600).map(|n| X32_SYSCALL_BIT | n));
        nrs.extend([0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0x4000_0000 - 1]);
        let archs = [AUDIT_ARCH_X86_64, 0x4000_0003, 0xc000_00b7, 0];
        let argful = [libc::SYS_clone, libc::SYS_personality, libc::SYS_ioctl];
        let mut checked = 0u64;
        for arch in archs {
            for &nr in &nrs {
                let full = argful.iter().any(|a| *a as u32 == nr);
                let combos: Vec<(u64, u64)> = if full {
                    arg0.iter()
                        .flat_map(|a| arg1.iter().map(move |b| (*a, *b)))
                        .collect()
                } else {
                    vec![(0, 0), (u64::MAX, u64::MAX), (libc::TIOCSTI, libc::TIOCSTI)]
                };
                for (a0, a1) in combos {
                    let data = interp::data(nr, arch, [a0, a1, 0, 0, 0, 0]);
                    let want = expected(&reference, &data);
                    let got = interp::run(&tree, &data);
                    assert_eq!(
                        got, want,
                        "arch {arch:#x} nr {nr:#x} args {a0:#x} {a1:#x}: tree {got:#x}, reference {want:#x}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 6_000, "{checked}");
        // And what the policy says, spelled out for a few calls.
        let v = |nr: i64, a0: u64, a1: u64| {
            interp::run(
                &tree,
                &interp::data(nr as u32, AUDIT_ARCH_X86_64, [a0, a1, 0, 0, 0, 0]),
            )
        };
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        assert_eq!(v(libc::SYS_mount, 0, 0), eperm);
        assert_eq!(v(libc::SYS_read, 0, 0), libc::SECCOMP_RET_ALLOW);
        assert_eq!(v(libc::SYS_clone, libc::CLONE_NEWUSER as u64, 0), eperm);
        assert_eq!(
            v(libc::SYS_clone, libc::SIGCHLD as u64, 0),
            libc::SECCOMP_RET_ALLOW
        );
        assert_eq!(
            v(libc::SYS_clone3, 0, 0),
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32
        );
        assert_eq!(v(libc::SYS_ioctl, 0, libc::TIOCSTI), eperm);
        assert_eq!(v(X32_SYSCALL_BIT as i64 | libc::SYS_getpid, 0, 0), eperm);
        let i386 = interp::run(&tree, &interp::data(20, 0x4000_0003, [0; 6]));
        assert_eq!(i386, libc::SECCOMP_RET_KILL_PROCESS);
    }

    /// The policy itself, pinned independently of `DENIED` and `NAMESPACE_FLAGS` (the
    /// test above builds both programs from them, so it cannot see an entry dropped there).
    #[test]
    fn the_policy_denies_what_the_docs_promise() {
        let tree = seccomp_program().unwrap();
        let v = |nr: i64, a0: u64| {
            interp::run(
                &tree,
                &interp::data(nr as u32, AUDIT_ARCH_X86_64, [a0, 0, 0, 0, 0, 0]),
            )
        };
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        use libc::*;
        for nr in [
            SYS_mount,
            SYS_umount2,
            SYS_pivot_root,
            SYS_chroot,
            SYS_fsopen,
            SYS_fsconfig,
            SYS_fsmount,
            SYS_fspick,
            SYS_move_mount,
            SYS_open_tree,
            SYS_mount_setattr,
            SYS_unshare,
            SYS_setns,
            SYS_ptrace,
            SYS_process_vm_readv,
            SYS_process_vm_writev,
            SYS_kcmp,
            SYS_kexec_load,
            SYS_kexec_file_load,
            SYS_bpf,
            SYS_perf_event_open,
            SYS_keyctl,
            SYS_add_key,
            SYS_request_key,
            SYS_init_module,
            SYS_finit_module,
            SYS_delete_module,
            SYS_userfaultfd,
            SYS_io_uring_setup,
            SYS_io_uring_enter,
            SYS_io_uring_register,
            SYS_acct,
            SYS_swapon,
            SYS_swapoff,
            SYS_reboot,
            SYS_settimeofday,
            SYS_clock_settime,
            SYS_clock_adjtime,
            SYS_sethostname,
            SYS_setdomainname,
            SYS_syslog,
            SYS_quotactl,
            SYS_open_by_handle_at,
            SYS_name_to_handle_at,
            SYS_lookup_dcookie,
            SYS_iopl,
            SYS_ioperm,
            SYS_vhangup,
            SYS_uselib,
            SYS_ustat,
            SYS_sysfs,
            SYS__sysctl,
            SYS_fanotify_init,
        ] {
            assert_eq!(v(nr, 0), eperm, "syscall {nr} must be denied");
        }
        for flag in [
            CLONE_NEWNS,
            CLONE_NEWCGROUP,
            CLONE_NEWUTS,
            CLONE_NEWIPC,
            CLONE_NEWUSER,
            CLONE_NEWPID,
            CLONE_NEWNET,
            0x80, // CLONE_NEWTIME
        ] {
            let flags = (flag | SIGCHLD) as u64;
            assert_eq!(v(SYS_clone, flags), eperm, "clone({flags:#x})");
        }
        assert_eq!(v(SYS_clone, SIGCHLD as u64), libc::SECCOMP_RET_ALLOW);
        assert_eq!(v(SYS_personality, 0x0040_0000), eperm, "READ_IMPLIES_EXEC");
        assert_eq!(
            v(SYS_personality, 0xffff_ffff),
            libc::SECCOMP_RET_ALLOW,
            "query"
        );
    }

    #[test]
    fn the_tree_is_short_for_every_number() {
        // What the kernel emulates per syscall number when it builds its cache: a handful
        // of instructions, not one comparison per listed syscall.
        let tree = seccomp_program().unwrap();
        assert!(tree.len() < 200, "{} instructions", tree.len());
    }
}
