//! The sandbox's seccomp policy as one classic-BPF program whose syscall-number dispatch is
//! a balanced binary tree.
//!
//! Why not seccompiler's program (kept as the reference in the tests below): it compares
//! the syscall number against every listed syscall in turn, and on every filter it is given
//! the kernel builds a per-syscall cache by emulating the filter once for each of the
//! ~460 syscall numbers (`seccomp_cache_prepare`) — so attaching that linear program took
//! ~190 µs per sandbox here (plus ~12 µs for each further small program), on the critical
//! path of every create. A tree makes each emulation ~7 comparisons. It also lets one
//! program say what seccompiler cannot: "every x32 number" (a range).
//!
//! The generated program is checked against seccompiler's programs, syscall number by
//! syscall number and with every argument value the rules distinguish, by a BPF interpreter
//! in the tests (`same_verdicts_as_seccompiler`).

use seccompiler::sock_filter;
use std::collections::BTreeMap;

/// What the filter answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Fail the call with this errno.
    Errno(u32),
    KillProcess,
}

impl Verdict {
    fn ret(self) -> u32 {
        match self {
            Verdict::Allow => libc::SECCOMP_RET_ALLOW,
            Verdict::Errno(e) => libc::SECCOMP_RET_ERRNO | (e & libc::SECCOMP_RET_DATA),
            Verdict::KillProcess => libc::SECCOMP_RET_KILL_PROCESS,
        }
    }
}

/// The rule for one syscall number; arguments are compared on their low 32 bits (as
/// seccompiler's `Dword`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Always this verdict.
    Always(Verdict),
    /// `then` when `arg & mask != 0`, else allow.
    AnyBitOf { arg: u8, mask: u32, then: Verdict },
    /// `then` when `arg` is one of `values`, else allow.
    OneOf {
        arg: u8,
        values: Vec<u32>,
        then: Verdict,
    },
    /// Allow when `arg` is one of `values`, else `then`.
    NoneOf {
        arg: u8,
        values: Vec<u32>,
        then: Verdict,
    },
}

impl Check {
    /// The verdict this check gives when it matches (the other outcome is allow).
    fn verdict(&self) -> Verdict {
        match self {
            Check::Always(v)
            | Check::AnyBitOf { then: v, .. }
            | Check::OneOf { then: v, .. }
            | Check::NoneOf { then: v, .. } => *v,
        }
    }
}

/// `AUDIT_ARCH_X86_64` (EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE).
pub const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
/// The x32 ABI's syscall numbers carry this bit (`__X32_SYSCALL_BIT`).
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const LD_W_ABS: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS (0x20)
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JSET_K: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K
/// `struct seccomp_data`: `nr` at 0, `arch` at 4, `args[i]` at 16 + 8 i (low word first).
const NR: u32 = 0;
const ARCH: u32 = 4;
fn arg_low(arg: u8) -> u32 {
    16 + 8 * u32::from(arg)
}

/// A jump target while the program is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Label {
    Next,
    Verdict(u32),
    Block(u32),
    Subtree(usize),
}

enum Insn {
    Load(u32),
    Jump(u16, u32, Label, Label),
    Ret(u32),
    Mark(Label),
}

/// The program: a foreign arch gets `KillProcess`, an x32 number `x32`, a number in
/// `rules` its check, anything else is allowed. Fails (and the caller must fail closed)
/// when a jump would not fit classic BPF's 8-bit offsets.
pub fn program(rules: &BTreeMap<u32, Check>, x32: Verdict) -> Result<Vec<sock_filter>, String> {
    let keys: Vec<u32> = rules.keys().copied().collect();
    if keys.iter().any(|k| *k >= X32_SYSCALL_BIT) {
        return Err("seccomp: a rule for an x32 number".into());
    }
    let mut code = vec![
        Insn::Load(ARCH),
        Insn::Jump(
            JEQ_K,
            AUDIT_ARCH_X86_64,
            Label::Next,
            Label::Verdict(Verdict::KillProcess.ret()),
        ),
        Insn::Load(NR),
        Insn::Jump(
            JGE_K,
            X32_SYSCALL_BIT,
            Label::Verdict(x32.ret()),
            Label::Next,
        ),
    ];
    let mut subtrees = 0;
    tree(&keys, rules, &mut code, &mut subtrees);
    for (nr, check) in rules {
        let arg = match check {
            Check::Always(_) => continue,
            Check::AnyBitOf { arg, .. } | Check::OneOf { arg, .. } | Check::NoneOf { arg, .. } => {
                *arg
            }
        };
        let then = check.verdict().ret();
        if arg > 5 {
            return Err(format!("seccomp: syscall {nr} has no argument {arg}"));
        }
        code.push(Insn::Mark(Label::Block(*nr)));
        code.push(Insn::Load(arg_low(arg)));
        let allow = Label::Verdict(Verdict::Allow.ret());
        match check {
            Check::AnyBitOf { mask, .. } => {
                code.push(Insn::Jump(JSET_K, *mask, Label::Verdict(then), allow));
            }
            Check::OneOf { values, .. } | Check::NoneOf { values, .. } => {
                let one_of = matches!(check, Check::OneOf { .. });
                let (hit, miss) = if one_of {
                    (Label::Verdict(then), allow)
                } else {
                    (allow, Label::Verdict(then))
                };
                for (i, v) in values.iter().enumerate() {
                    let last = i + 1 == values.len();
                    code.push(Insn::Jump(
                        JEQ_K,
                        *v,
                        hit,
                        if last { miss } else { Label::Next },
                    ));
                }
                if values.is_empty() {
                    return Err(format!("seccomp: an empty value list for syscall {nr}"));
                }
            }
            Check::Always(_) => {}
        }
    }
    let mut verdicts: Vec<u32> = vec![Verdict::Allow.ret(), Verdict::KillProcess.ret(), x32.ret()];
    verdicts.extend(rules.values().map(|c| c.verdict().ret()));
    verdicts.sort_unstable();
    verdicts.dedup();
    for v in verdicts {
        code.push(Insn::Mark(Label::Verdict(v)));
        code.push(Insn::Ret(v));
    }
    assemble(code)
}

/// The dispatch over `keys` (sorted): `JGE` on the middle key, the lower half, the upper
/// half; a single key is one `JEQ` to its verdict or block, else allow.
fn tree(keys: &[u32], rules: &BTreeMap<u32, Check>, code: &mut Vec<Insn>, n: &mut usize) {
    let allow = Label::Verdict(Verdict::Allow.ret());
    match keys {
        [] => code.push(Insn::Ret(Verdict::Allow.ret())),
        [k] => {
            let target = match &rules[k] {
                Check::Always(v) => Label::Verdict(v.ret()),
                _ => Label::Block(*k),
            };
            code.push(Insn::Jump(JEQ_K, *k, target, allow));
        }
        _ => {
            let mid = keys.len() / 2;
            *n += 1;
            let upper = Label::Subtree(*n);
            code.push(Insn::Jump(JGE_K, keys[mid], upper, Label::Next));
            tree(&keys[..mid], rules, code, n);
            code.push(Insn::Mark(upper));
            tree(&keys[mid..], rules, code, n);
        }
    }
}

/// Resolve labels into relative offsets.
fn assemble(code: Vec<Insn>) -> Result<Vec<sock_filter>, String> {
    let mut at = BTreeMap::new();
    let mut len = 0usize;
    for insn in &code {
        match insn {
            Insn::Mark(l) => {
                at.insert(*l, len);
            }
            _ => len += 1,
        }
    }
    if len > 4096 {
        return Err("seccomp: program too long".into());
    }
    let mut out = Vec::with_capacity(len);
    for insn in code {
        let pc = out.len();
        let off = |l: Label| -> Result<u8, String> {
            let target = match l {
                Label::Next => pc + 1,
                l => *at.get(&l).ok_or("seccomp: unresolved jump")?,
            };
            target
                .checked_sub(pc + 1)
                .and_then(|d| u8::try_from(d).ok())
                .ok_or_else(|| "seccomp: a jump does not fit the program".to_string())
        };
        out.push(match insn {
            Insn::Mark(_) => continue,
            Insn::Load(k) => sock_filter {
                code: LD_W_ABS,
                jt: 0,
                jf: 0,
                k,
            },
            Insn::Ret(k) => sock_filter {
                code: RET_K,
                jt: 0,
                jf: 0,
                k,
            },
            Insn::Jump(code, k, t, f) => sock_filter {
                code,
                jt: off(t)?,
                jf: off(f)?,
                k,
            },
        });
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod interp {
    //! A classic-BPF interpreter for seccomp programs: the instructions seccompiler and
    //! [`super::program`] emit, and nothing else (anything else fails the test).
    use seccompiler::sock_filter;

    /// `struct seccomp_data` in memory.
    pub fn data(nr: u32, arch: u32, args: [u64; 6]) -> Vec<u8> {
        let mut d = Vec::with_capacity(64);
        d.extend_from_slice(&nr.to_le_bytes());
        d.extend_from_slice(&arch.to_le_bytes());
        d.extend_from_slice(&0u64.to_le_bytes());
        for a in args {
            d.extend_from_slice(&a.to_le_bytes());
        }
        d
    }

    pub fn run(prog: &[sock_filter], data: &[u8]) -> u32 {
        let mut a: u32 = 0;
        let mut pc = 0usize;
        loop {
            let i = &prog[pc];
            let k = i.k;
            pc += 1;
            match i.code {
                0x20 => {
                    let o = k as usize;
                    a = u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
                }
                0x54 => a &= k,           // BPF_ALU | BPF_AND | BPF_K
                0x05 => pc += k as usize, // BPF_JMP | BPF_JA
                0x15 | 0x25 | 0x35 | 0x45 => {
                    let hit = match i.code {
                        0x15 => a == k,
                        0x25 => a > k,
                        0x35 => a >= k,
                        _ => a & k != 0,
                    };
                    pc += usize::from(if hit { i.jt } else { i.jf });
                }
                0x06 => return k,
                c => panic!("instruction {c:#x} not interpreted"),
            }
        }
    }

    /// The kernel's verdict over several filters, `progs` in the order they were attached:
    /// evaluated newest first, a result replaced only by a strictly more restrictive action
    /// (compared as signed, so KILL_PROCESS is the lowest) — `seccomp_run_filters`.
    pub fn run_all(progs: &[&[sock_filter]], data: &[u8]) -> u32 {
        let mut ret = libc::SECCOMP_RET_ALLOW;
        let action = |r: u32| (r & 0xffff_0000) as i32;
        for (i, p) in progs.iter().rev().enumerate() {
            let r = run(p, data);
            if i == 0 || action(r) < action(ret) {
                ret = r;
            }
        }
        ret
    }
}
