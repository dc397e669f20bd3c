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

use super::sys;
use landlock::{
    path_beneath_rules, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op,
    SeccompCondition as Cond, SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::{BTreeMap, HashMap};

/// Paths (inside the sandbox) that stay writable.
pub const WRITABLE: &[&str] = &["/tmp", "/workspace", "/root", "/dev"];

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

fn cond(arg: u8, op: Op, value: u64) -> Result<Cond, String> {
    Cond::new(arg, Len::Dword, op, value).map_err(|e| format!("seccomp condition: {e}"))
}

fn rule(conds: Vec<Cond>) -> Result<SeccompRule, String> {
    SeccompRule::new(conds).map_err(|e| format!("seccomp rule: {e}"))
}

fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        TargetArch::x86_64,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("seccomp compile: {e}"))
}

/// The x32 ABI's syscall numbers carry this bit (`__X32_SYSCALL_BIT`).
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Deny every x32 syscall with EPERM; anything else is left to the other programs (the
/// deny-list's own arch check kills a foreign arch). seccompiler matches syscall numbers
/// one by one and has no range test, so this one is written out: load the arch, then the
/// number, one comparison each.
fn x32_program() -> BpfProgram {
    use seccompiler::sock_filter;
    const LD_W_ABS: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS (0x20)
    const JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
    const JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
                             // struct seccomp_data: int nr at offset 0, __u32 arch at offset 4.
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        op(LD_W_ABS, 0, 0, 4),
        op(JEQ_K, 0, 3, AUDIT_ARCH_X86_64),
        op(LD_W_ABS, 0, 0, 0),
        op(JGE_K, 0, 1, X32_SYSCALL_BIT),
        op(RET_K, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        op(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

/// `AUDIT_ARCH_X86_64` (EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE).
const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;

/// Build the three seccomp programs (EPERM denials, ENOSYS for clone3, EPERM for x32).
fn seccomp_programs() -> Result<[BpfProgram; 3], String> {
    let mut deny: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|(_, nr)| (*nr, Vec::new())).collect();
    // clone(flags, ...) creating any namespace.
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|f| rule(vec![cond(0, Op::MaskedEq(*f), *f)?]))
        .collect::<Result<Vec<_>, _>>()?;
    deny.insert(libc::SYS_clone, clone_rules);
    // personality(p) for anything but the allowed set.
    let not_allowed = PERSONALITIES
        .iter()
        .map(|p| cond(0, Op::Ne, *p))
        .collect::<Result<Vec<_>, _>>()?;
    deny.insert(libc::SYS_personality, vec![rule(not_allowed)?]);
    // ioctl(fd, TIOCSTI/TIOCLINUX): typing into another terminal.
    deny.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![cond(1, Op::Eq, libc::TIOCSTI)?])?,
            rule(vec![cond(1, Op::Eq, libc::TIOCLINUX)?])?,
        ],
    );
    let mut nosys = BTreeMap::new();
    nosys.insert(libc::SYS_clone3, Vec::new());
    Ok([
        compile(deny, libc::EPERM)?,
        compile(nosys, libc::ENOSYS)?,
        x32_program(),
    ])
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
    let programs = seccomp_programs()?;
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
    for p in &programs {
        seccompiler::apply_filter(p).map_err(|e| format!("seccomp: {e}"))?;
    }
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
    #[test]
    fn filters_compile() {
        super::seccomp_programs().expect("seccomp programs compile");
    }
}
